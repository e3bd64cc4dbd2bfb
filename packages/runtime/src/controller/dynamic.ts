/**
 * @module controller/dynamic
 * Watches a controller adds and removes while it runs (`ctx.watchKinds`): each request names the kinds whose changes
 * should reconcile it, and the controller watches exactly the kinds some request names.
 *
 * Guarantees:
 * - `set(key, kinds)` makes the kinds of the request exactly `kinds`, and resolves once each has synced in the cache
 *   (the reconcile can read it then). A kind that does not sync is dropped from the request and `set` rejects naming
 *   it: at once when the apiserver refuses to list it (Forbidden, NotFound: a `CacheError` `WatchRefused` with the
 *   answer as `cause`), after the controller's `cacheSyncTimeoutMs` otherwise (`CacheSyncTimeout`), or when the reconcile's signal aborts
 *   (`CacheStopped`, caused by the abort). The other kinds stay.
 * - After a kind's initial list, each change (add, update, delete) of an object of it enqueues every request naming
 *   the kind, and is shown to the controller's expectations, as the events of its static watches are. The initial
 *   list enqueues nothing: the request that named the kind is reconciling, and reads it once `set` resolved.
 * - A kind no request names any more loses its handler at once, and the controller its hold on the kind's informer:
 *   the informer stops, and its objects are dropped, unless a static watch, a read or another hold keeps it
 *   (cache/cache.ts).
 * - A request's kinds are released when its primary object is deleted (the delete event), and every kind when the
 *   controller stops.
 * Caveat: a reconcile of an object already deleted that names kinds again holds them until the controller stops; name
 * kinds only for an object that exists.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type Cache, CacheError, type CacheHold } from '../cache/cache.ts';
import { type Kind, type KubeObject, resourceId } from '../client/resource.ts';
import { messageOf } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { WorkQueue } from '../workqueue/index.ts';
import type { Expectations } from './expectations.ts';

/** The codes of a list that retrying will not fix soon: the kind is not served, or not granted. */
const REFUSED: ReadonlySet<string> = new Set(['Forbidden', 'NotFound']);

/** What the dynamic watches of a controller need from it. */
export interface DynamicWatchesOptions {
  readonly cache: Cache;
  /** The controller's queue: a change enqueues the keys of the requests naming its kind. */
  readonly queue: Pick<WorkQueue<string>, 'add'>;
  /** The controller's expectations, shown each change. */
  readonly expectations: Pick<Expectations, 'observe'>;
  readonly log: Logger;
  /** Longest wait for a named kind to sync (the controller's `cacheSyncTimeoutMs`). */
  readonly syncTimeoutMs: number;
}

/** One kind some request names: its informer's hold, its handler, and the requests naming it. */
interface Watched {
  readonly kind: Kind;
  readonly hold: CacheHold<KubeObject>;
  readonly off: () => void;
  readonly claimants: Set<string>;
}

/** The kinds the requests of one controller name (see the module comment). */
export class DynamicWatches {
  readonly #o: DynamicWatchesOptions;
  /** By informer id (a kind and its metadata-only form are apart). */
  readonly #watched = new Map<string, Watched>();

  constructor(options: DynamicWatchesOptions) {
    this.#o = options;
  }

  /** The kinds the request of `key` names. */
  kinds(key: string): Kind[] {
    return [...this.#watched.values()].filter((w) => w.claimants.has(key)).map((w) => w.kind);
  }

  /** Makes the kinds of the request of `key` exactly `kinds`; see the module comment. */
  async set(key: string, kinds: readonly Kind[], signal: AbortSignal): Promise<void> {
    const wanted = new Map(kinds.map((k) => [idOf(k), k]));
    const released: Promise<void>[] = [];
    for (const [id, w] of this.#watched) if (!wanted.has(id)) released.push(this.#unclaim(id, w, key));
    const entries = [...wanted].map(([id, kind]) => this.#claim(id, kind, key));
    await Promise.all(released);
    const results = await Promise.allSettled(entries.map((w) => this.#synced(w, signal)));
    const failed = results.flatMap((r, i) =>
      r.status === 'rejected' ? [{ w: entries[i] as Watched, err: r.reason }] : [],
    );
    if (failed.length === 0) return;
    await Promise.all(failed.map(({ w }) => this.#unclaim(idOf(w.kind), w, key)));
    const first = failed[0]?.err;
    if (failed.length === 1) throw first;
    throw new CacheError(
      first instanceof CacheError ? first.code : 'CacheSyncTimeout',
      failed.map(({ err }) => messageOf(err)).join('; '),
      { cause: first },
    );
  }

  /** Releases every kind the request of `key` names (its primary object was deleted). */
  async forget(key: string): Promise<void> {
    await Promise.all([...this.#watched].map(([id, w]) => this.#unclaim(id, w, key)));
  }

  /** Releases every kind (the controller stops). */
  async stop(): Promise<void> {
    const all = [...this.#watched.values()];
    this.#watched.clear();
    for (const w of all) w.off();
    await Promise.all(all.map((w) => w.hold.release()));
  }

  #claim(id: string, kind: Kind, key: string): Watched {
    let w = this.#watched.get(id);
    if (!w) {
      const hold = this.#o.cache.hold(kind);
      const claimants = new Set<string>();
      const changed = (obj: KubeObject, deleted: boolean) => {
        this.#o.expectations.observe(obj, deleted);
        for (const k of claimants) this.#o.queue.add(k, 0);
      };
      const off = hold.informer.addEventHandler({
        add: (obj, initial) => {
          if (!initial) changed(obj, false);
        },
        update: (_old, obj) => changed(obj, false),
        delete: (obj) => changed(obj, true),
      });
      w = { kind, hold, off, claimants };
      this.#watched.set(id, w);
      this.#o.log.info({ resource: id }, 'watching a kind a request named');
    }
    w.claimants.add(key);
    return w;
  }

  async #unclaim(id: string, w: Watched, key: string): Promise<void> {
    if (!w.claimants.delete(key) || w.claimants.size > 0 || this.#watched.get(id) !== w) return;
    this.#watched.delete(id);
    w.off();
    this.#o.log.info({ resource: id }, 'no request names the kind any more: unwatching it');
    await w.hold.release();
  }

  async #synced(w: Watched, signal: AbortSignal): Promise<void> {
    const inf = w.hold.informer;
    if (inf.hasSynced) return;
    const limitMs = this.#o.syncTimeoutMs;
    const timeout = AbortSignal.timeout(limitMs);
    const waiting = AbortSignal.any([signal, timeout]);
    const synced = inf.waitForSync(waiting);
    const name = resourceId(w.kind);
    const poll = new AbortController();
    try {
      for (;;) {
        const ok = await Promise.race([synced, sleep(100, undefined, { signal: poll.signal }).then(() => undefined)]);
        if (ok === true) return;
        const refused = inf.syncError;
        if (refused && REFUSED.has(refused.code))
          throw new CacheError(
            'WatchRefused',
            `${name}: the apiserver refused to list it (${refused.code}: ${refused.message}); ${refused.code === 'Forbidden' ? 'grant the operator list and watch on it' : 'is it served (its CRD installed)?'}`,
            { cause: refused },
          );
        if (ok === false) {
          if (signal.aborted)
            throw new CacheError('CacheStopped', `stopped waiting for ${name} to sync`, { cause: signal.reason });
          const last = inf.syncError ? ` (last error: ${inf.syncError.message})` : '';
          throw new CacheError('CacheSyncTimeout', `${name} did not sync within ${limitMs / 1000} s${last}`);
        }
      }
    } finally {
      poll.abort();
    }
  }
}

/** A kind's id in the cache: a kind and its metadata-only form are watched apart. */
function idOf(kind: Kind): string {
  return kind.metadataOnly ? `${resourceId(kind)} (metadata)` : resourceId(kind);
}
