/**
 * @module controller/dynamic
 * Watches a controller adds and removes while it runs (`ctx.watchKinds`): each request names the kinds whose changes
 * should reconcile it, and the controller watches exactly the kinds some request names.
 *
 * Guarantees:
 * - `set(key, kinds)` makes the kinds of the request exactly `kinds`, and resolves once each has synced in the cache
 *   (the reconcile can read it then). A kind that does not sync is dropped from the request and `set` rejects naming
 *   it: at once when the apiserver refuses to list or watch it (Forbidden, NotFound, MethodNotAllowed: a `CacheError`
 *   `WatchRefused` with the answer as `cause`), or after the controller's `cacheSyncTimeoutMs` (`CacheSyncTimeout`).
 *   The other kinds stay. A kind listed but not watchable (RBAC granting list only) is refused too, when its
 *   streaming list was refused before a paged one passed; with `listMode: 'paged'` a watch refused after the list is
 *   not seen here (the informer retries it with backoff and counts it in `opkit_watch_errors_total`). A kind named
 *   twice in one call is a `UsageError`.
 * - After a kind's initial list, each change (add, update, delete) of an object of it enqueues every request naming
 *   the kind whose filter (`namespace`, `labelSelector`) the object passes, and is shown to the controller's
 *   expectations, as the events of its static watches are. The initial list enqueues nothing: the request that named
 *   the kind is reconciling, and reads it once `set` resolved.
 * - A kind no request names any more loses its handler at once, and the controller its hold on the kind's informer:
 *   the informer stops, and its objects are dropped, unless another controller still holds it, or a static watch, an
 *   index or a read made it first (cache/cache.ts).
 * - A request's kinds are released when its primary object is gone: at its delete event, after a reconcile of it
 *   (`settled`: a reconcile may name kinds after the delete event), and when a change of a kind it names finds it gone
 *   (a shard handed off drops objects without delete events); every kind when the controller stops. So a request whose
 *   object is not in the primary cache (enqueued by hand) holds what it names for its reconcile only (warned once).
 * - A reconcile aborted while it waits (its deadline, a stop: `CacheStopped`, caused by the abort) keeps what it
 *   named, so the informer goes on listing for the retry; a kind unwatched meanwhile (its object deleted) ends the
 *   wait at once (`CacheStopped`).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type Cache, CacheError, type CacheHold } from '../cache/cache.ts';
import type { ApiError } from '../client/errors.ts';
import { Selector } from '../client/labels.ts';
import { type Kind, type KubeObject, resourceId } from '../client/resource.ts';
import { messageOf, UsageError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { WorkQueue } from '../workqueue/index.ts';
import type { Expectations } from './expectations.ts';

/** The codes of a list or watch that retrying will not fix soon: the kind is not served, not granted, not listable. */
const REFUSED: ReadonlySet<string> = new Set(['Forbidden', 'NotFound', 'MethodNotAllowed']);

/** A kind a request names, with what its changes must pass to reconcile the request. */
export type DynamicWatch =
  | Kind
  | {
      readonly kind: Kind;
      /** Only changes of objects in this namespace reconcile the request. */
      readonly namespace?: string;
      /** Only changes of objects whose labels this selector matches (e.g. `app=web`) reconcile the request. */
      readonly labelSelector?: string;
    };

/** What the dynamic watches of a controller need from it. */
export interface DynamicWatchesOptions {
  readonly cache: Cache;
  /** The controller's queue: a change enqueues the keys of the requests naming its kind. */
  readonly queue: Pick<WorkQueue<string>, 'add'>;
  /** The controller's expectations, shown each change. */
  readonly expectations: Pick<Expectations, 'observe'>;
  /** Whether the primary object of a request key is still there (cached, or deleted and not yet reconciled). */
  readonly exists: (key: string) => boolean;
  readonly log: Logger;
  /** Longest wait for a named kind to sync (the controller's `cacheSyncTimeoutMs`). */
  readonly syncTimeoutMs: number;
}

/** What a change must pass to reconcile one request. */
interface Filter {
  readonly namespace: string | undefined;
  readonly selector: Selector | undefined;
}

/** One kind some request names: its informer's hold, its handler, and the requests naming it. */
interface Watched {
  readonly kind: Kind;
  readonly hold: CacheHold<KubeObject>;
  readonly off: () => void;
  readonly claimants: Map<string, Filter>;
  /** Aborts when the kind is unwatched: a wait for it to sync ends. */
  readonly stop: AbortController;
}

/** The kinds the requests of one controller name (see the module comment). */
export class DynamicWatches {
  readonly #o: DynamicWatchesOptions;
  /** By informer id (a kind and its metadata-only form are apart). */
  readonly #watched = new Map<string, Watched>();
  /** Keys warned about (named kinds for an object not cached), once each. */
  readonly #warned = new Set<string>();

  constructor(options: DynamicWatchesOptions) {
    this.#o = options;
  }

  /** Makes the kinds of the request of `key` exactly `watches`; see the module comment. */
  async set(key: string, watches: readonly DynamicWatch[], signal: AbortSignal): Promise<void> {
    const wanted = new Map<string, { kind: Kind; filter: Filter }>();
    for (const w of watches) {
      const kind = 'kind' in w && typeof w.kind === 'object' ? w.kind : (w as Kind);
      const o = w as { namespace?: string; labelSelector?: string };
      const selector = o.labelSelector === undefined ? undefined : Selector.from(o.labelSelector);
      if (wanted.has(idOf(kind)))
        throw new UsageError('InvalidArgument', `watchKinds names ${idOf(kind)} twice: name each kind once`);
      wanted.set(idOf(kind), { kind, filter: { namespace: o.namespace, selector } });
    }
    if (wanted.size > 0 && !this.#o.exists(key) && !this.#warned.has(key)) {
      this.#warned.add(key);
      this.#o.log.warn(
        { key },
        'watchKinds for a request whose object is not cached: what it names goes after this reconcile',
      );
    }
    const released: Promise<void>[] = [];
    for (const [id, w] of this.#watched) if (!wanted.has(id)) released.push(this.#unclaim(id, w, key));
    const entries = [...wanted].map(([id, { kind, filter }]) => this.#claim(id, kind, key, filter));
    await Promise.all(released);
    const results = await Promise.allSettled(entries.map((w) => this.#synced(w, signal)));
    const failed = results.flatMap((r, i) =>
      r.status === 'rejected' ? [{ w: entries[i] as Watched, err: r.reason as unknown }] : [],
    );
    if (failed.length === 0) return;
    // aborted waits keep their kinds: the informer goes on listing for the retry
    const given = failed.filter(({ err }) => !(err instanceof CacheError && err.code === 'CacheStopped'));
    await Promise.all(given.map(({ w }) => this.#unclaim(idOf(w.kind), w, key)));
    const first = failed[0]?.err;
    if (failed.length === 1) throw first;
    throw new CacheError(
      first instanceof CacheError ? first.code : 'CacheSyncTimeout',
      failed.map(({ err }) => messageOf(err)).join('; '),
      { cause: first },
    );
  }

  /** Releases every kind the request of `key` names (its primary object was deleted); failures are logged. */
  forget(key: string): void {
    Promise.all([...this.#watched].map(([id, w]) => this.#unclaim(id, w, key))).catch((err: unknown) =>
      this.#o.log.error({ key, err: messageOf(err) }, 'releasing the kinds a request named failed'),
    );
  }

  /** After a reconcile of `key`: releases what it names if its primary object is gone. */
  settled(key: string): void {
    if (this.#o.exists(key) || ![...this.#watched.values()].some((w) => w.claimants.has(key))) return;
    this.forget(key);
  }

  /** Releases every kind (the controller stops). */
  async stop(): Promise<void> {
    const all = [...this.#watched.values()];
    this.#watched.clear();
    for (const w of all) {
      w.off();
      w.stop.abort();
    }
    await Promise.all(all.map((w) => w.hold.release()));
  }

  #claim(id: string, kind: Kind, key: string, filter: Filter): Watched {
    let w = this.#watched.get(id);
    if (!w) {
      const hold = this.#o.cache.hold(kind);
      const claimants = new Map<string, Filter>();
      // an update also reconciles the requests whose filter its old state passed (as a static watch maps old and new)
      const changed = (obj: KubeObject, deleted: boolean, old?: KubeObject) => {
        this.#o.expectations.observe(obj, deleted);
        for (const [k, f] of claimants) {
          if (!this.#o.exists(k)) this.forget(k);
          else if (passes(f, obj) || (old !== undefined && passes(f, old))) this.#o.queue.add(k, 0);
        }
      };
      const off = hold.informer.addEventHandler({
        add: (obj, initial) => {
          if (!initial) changed(obj, false);
        },
        update: (old, obj) => changed(obj, false, old),
        delete: (obj) => changed(obj, true),
      });
      w = { kind, hold, off, claimants, stop: new AbortController() };
      this.#watched.set(id, w);
      this.#o.log.info({ resource: id }, 'watching a kind a request named');
    }
    w.claimants.set(key, filter);
    return w;
  }

  async #unclaim(id: string, w: Watched, key: string): Promise<void> {
    if (!w.claimants.delete(key) || w.claimants.size > 0 || this.#watched.get(id) !== w) return;
    this.#watched.delete(id);
    w.off();
    w.stop.abort();
    this.#o.log.info({ resource: id }, 'no request names the kind any more: unwatching it');
    await w.hold.release();
  }

  /** A synced kind whose watch was refused (RBAC that grants list, not watch) is refused too. */
  #watchable(w: Watched): void {
    const refused = w.hold.informer.watchRefusal;
    if (refused) throw refusal(resourceId(w.kind), refused);
  }

  async #synced(w: Watched, signal: AbortSignal): Promise<void> {
    const inf = w.hold.informer;
    if (inf.hasSynced) return this.#watchable(w);
    const limitMs = this.#o.syncTimeoutMs;
    const waiting = AbortSignal.any([signal, w.stop.signal, AbortSignal.timeout(limitMs)]);
    const synced = inf.waitForSync(waiting);
    const name = resourceId(w.kind);
    const poll = new AbortController();
    try {
      for (;;) {
        const ok = await Promise.race([synced, sleep(100, undefined, { signal: poll.signal }).then(() => undefined)]);
        if (ok === true) return this.#watchable(w);
        const refused = inf.syncError;
        if (refused && REFUSED.has(refused.code)) throw refusal(name, refused);
        if (ok === false) {
          if (signal.aborted)
            throw new CacheError('CacheStopped', `stopped waiting for ${name} to sync`, { cause: signal.reason });
          if (w.stop.signal.aborted)
            throw new CacheError('CacheStopped', `${name} was unwatched while the request waited for it to sync`);
          const last = inf.syncError ? ` (last error: ${inf.syncError.message})` : '';
          throw new CacheError('CacheSyncTimeout', `${name} did not sync within ${limitMs / 1000} s${last}`);
        }
      }
    } finally {
      poll.abort();
    }
  }
}

/** A kind the apiserver will not let the operator list or watch. */
function refusal(name: string, refused: ApiError): CacheError {
  const hint =
    refused.code === 'Forbidden'
      ? 'grant the operator list and watch on it'
      : 'is it served (its CRD installed), and can it be listed?';
  return new CacheError(
    'WatchRefused',
    `${name}: the apiserver refused to list or watch it (${refused.code}: ${refused.message}); ${hint}`,
    { cause: refused },
  );
}

/** Whether a change of `obj` passes a request's filter. */
function passes(f: Filter, obj: KubeObject): boolean {
  if (f.namespace !== undefined && obj.metadata.namespace !== f.namespace) return false;
  return f.selector === undefined || f.selector.matches(obj.metadata.labels);
}

/** A kind's id in the cache: a kind and its metadata-only form are watched apart. */
function idOf(kind: Kind): string {
  return kind.metadataOnly ? `${resourceId(kind)} (metadata)` : resourceId(kind);
}
