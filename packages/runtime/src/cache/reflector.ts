/**
 * @module cache/reflector
 * Keeps a `Store` equal to the server's state of one resource: list, then watch from the list's resourceVersion with
 * bookmarks, resuming each new watch from the last resourceVersion seen.
 *
 * The list is streamed by default (KEP-3157 WatchList, as client-go does): one watch with `sendInitialEvents=true`
 * delivers the current state as events, parsed one by one as the bytes arrive (no page is held whole), up to the
 * bookmark that marks its end; the store is then replaced atomically and the same watch goes on with the changes.
 * As client-go's reflector: a streaming list the server refuses or fails (an error answer such as the 400/422 of a
 * server without the WatchList feature, an error event, or a watch that ends before the end-of-initial-events
 * bookmark — an older server, or one that stopped) is replaced by a paginated list for that list-and-watch cycle
 * only; the next relist streams again. A streaming list that could not reach the server, broke off mid-stream, went
 * silent or was throttled (429) is not a verdict on the feature: it is retried as a stream after the backoff.
 * `listMode: 'paged'` asks for paginated lists from the start.
 *
 * The loop, as a state machine: LIST → WATCH → (server timeout: WATCH again at once) | (410 Gone, or a
 * resourceVersion too large for the server after an etcd restore: LIST again from scratch and replace the store
 * atomically) | (any other error, or a watch silent for longer than the inactivity deadline: wait with exponential
 * backoff and jitter, then WATCH again from the last resourceVersion) | (suspected stale by the probe of
 * cache/staleness.ts — behind a resourceVersion the apiserver had 90 s before, though its watches end on time: LIST in
 * pages at once, the current list or watch aborted). Only the caller's abort ends the loop: no error stops it, and
 * every error is reported (log + metric) before the retry.
 *
 * Relists are paced as client-go paces list-and-watch cycles: the first relist after a healthy watch runs at once (a
 * compaction is routine), each further one without a healthy watch in between waits 800 ms, doubling up to 30 s, with
 * up to 100 % jitter — so a server that keeps answering 410 cannot drive a tight relist loop.
 *
 * Guarantees: `synced` becomes true only after the first full list is in the store. Each watch asks the server for a
 * random timeout in [30, 45) seconds (so a fleet's watches do not restart together) and is torn down if it has not ended
 * 15 s after that: the server promised to end it, so its silence means the connection hangs — a silent hang is
 * detected within 60 s even on a resource with no changes, without HTTP/2 pings (restarting a watch from the last
 * resourceVersion costs the apiserver one request served from its watch cache). A watch that ends within a second
 * without delivering anything is treated as an error (backoff), so a misbehaving server cannot cause a tight loop.
 * A server that says when to come back (Retry-After) is retried then. The backoff starts over once the server
 * answered well again — a list stored, a watch that delivered something, ran to its timeout or stayed open for 5 s —
 * so the next outage is met with short retries again, not with the long ones the last outage grew to (a quiet
 * resource would otherwise keep them: its watches deliver nothing).
 */
import type { Client } from '../client/client.ts';
import { ApiError, isResourceVersionTooLarge, toApiError } from '../client/errors.ts';
import { type FieldMask, MASK, type Masked } from '../client/protobuf/codec.ts';
import { type Kind, type KubeObject, keyOf } from '../client/resource.ts';
import type { ListOptions } from '../client/types.ts';
import type { WatchRequest } from '../client/watch.ts';
import { Backoff, type BackoffOptions } from '../internal/backoff.ts';
import { hop } from '../internal/hops.ts';
import { sleep } from '../internal/sleep.ts';
import type { Logger } from '../logger.ts';
import type { WatchMetrics } from '../metrics.ts';
import { type StalenessOptions, StaleWatch } from './staleness.ts';
import type { Store } from './store.ts';
import { maskOf } from './transform.ts';

export interface ReflectorOptions<T extends KubeObject> {
  readonly client: Client;
  readonly resource: Kind<T>;
  readonly namespace?: string | undefined;
  readonly labelSelector?: string | undefined;
  /** A partition (selectors in these options): a relist replaces its objects only; others are never stored. */
  readonly partition?: { readonly has: (obj: KubeObject) => boolean } | undefined;
  readonly fieldSelector?: string | undefined;
  /** A shard selector (`ListOptions.shardSelector`), on the list and the watch. */
  readonly shardSelector?: string | undefined;
  /**
   * Applied to every object before it is stored (e.g. drop managedFields). The fields that `dropManagedFields` and
   * `keepFields` drop are skipped unread while a protobuf answer is decoded.
   */
  readonly transform?: ((obj: T) => T) | undefined;
  /** Items per list page (default 500). */
  readonly pageSize?: number | undefined;
  /** `stream` (default): a streaming list, falling back to pages where the server refuses; `paged`: pages only. */
  readonly listMode?: 'stream' | 'paged' | undefined;
  /** Longest tolerated silence on a watch (default: its server-side timeout + 15 s, so at most 60 s). */
  readonly inactivityTimeoutMs?: number | undefined;
  /** Server-side watch timeout range in seconds (default [30, 45)). */
  readonly watchTimeoutSeconds?: readonly [number, number] | undefined;
  readonly backoff?: BackoffOptions | undefined;
  /** Pacing of relists without a healthy watch between them (default 800 ms … 30 s, jitter 1.0). */
  readonly relistBackoff?: BackoffOptions | undefined;
  /** Stale-cache detection (cache/staleness.ts; default on, every 30 s, stale after 90 s); `false` turns it off. */
  readonly staleness?: StalenessOptions | false | undefined;
  readonly log: Logger;
  readonly metrics?: WatchMetrics | undefined;
}

/** The longest Retry-After honoured (as the backoff's cap); it is stretched by up to 20 % so replicas spread out. */
const RETRY_AFTER_MAX_MS = 30_000;

/** How long a watch must stay open to count as a good answer from the server (the backoff starts over). */
const HEALTHY_WATCH_MS = 5_000;

/** The annotation on the bookmark that ends a streaming list's initial events. */
const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

/**
 * Failures of a streaming list that say nothing about the server's support for it (client-go retries the stream on
 * connection refused and 429; a broken or silent stream is a broken connection): back off and stream again.
 */
const STREAM_AGAIN: ReadonlySet<string> = new Set(['Network', 'Inactive', 'TooManyRequests', 'Gone']);

export class Reflector<T extends KubeObject> {
  readonly #o: ReflectorOptions<T>;
  readonly #store: Store<T>;
  readonly #backoff: Backoff;
  readonly #relistBackoff: Backoff;
  /** Relists since the last healthy watch: the first is immediate, later ones are paced by `#relistBackoff`. */
  #relistsSinceHealthy = 0;
  #resourceVersion: string | undefined;
  /** When the current watch was accepted by the server (performance.now()), while it runs. */
  #watchOpenedAt: number | undefined;
  #synced = false;
  /** The error of the last failed list or watch, until the first list is stored. */
  #syncError: ApiError | undefined;
  /** A Forbidden watch (a streaming list included), until a watch opens. */
  #watchRefusal: ApiError | undefined;
  /** Stale-cache detection (cache/staleness.ts), unless turned off. */
  readonly #staleness: StaleWatch | undefined;
  /** Aborts the current list, watch or wait when the cache is suspected stale. */
  #cycle = new AbortController();
  #onSynced: (() => void)[] = [];
  /** Whether lists are streamed (`listMode: 'stream'`). */
  readonly #stream: boolean;
  /** A streaming list failed this cycle: the next list is paginated (then streaming is tried again). */
  #fallback = false;
  /** What the transform drops, skipped while protobuf is decoded. */
  readonly #mask: FieldMask | undefined;

  constructor(options: ReflectorOptions<T>, store: Store<T>) {
    this.#o = options;
    this.#store = store;
    this.#backoff = new Backoff(options.backoff);
    this.#relistBackoff = new Backoff({ initialMs: 800, maxMs: 30_000, jitter: 1, ...options.relistBackoff });
    this.#stream = (options.listMode ?? 'stream') === 'stream';
    this.#mask = maskOf(options.transform);
    const { client, namespace, log } = options;
    this.#staleness =
      options.staleness === false
        ? undefined
        : new StaleWatch({
            ...{ client, resource: options.resource as Kind<KubeObject>, namespace, log },
            ...{ options: options.staleness ?? {}, counted: options.metrics?.stale?.bind(options.metrics) },
            synced: () => this.#synced,
            resourceVersion: () => this.#resourceVersion,
            interrupt: () => {
              this.#cycle.abort();
              this.#cycle = new AbortController();
            },
          });
  }

  /** How the next (or current) list is made: `stream` or `paged`. */
  get listMode(): 'stream' | 'paged' {
    return this.#stream && !this.#fallback ? 'stream' : 'paged';
  }

  get synced(): boolean {
    return this.#synced;
  }

  /** A Forbidden watch since the last watch that opened (RBAC that grants list but not watch). */
  get watchRefusal(): ApiError | undefined {
    return this.#watchRefusal;
  }

  /** Before the first list is stored: why the last attempt failed (undefined once synced, or before any failure). */
  get syncError(): ApiError | undefined {
    return this.#syncError;
  }

  /** The resourceVersion of the last list, event or bookmark. */
  get resourceVersion(): string | undefined {
    return this.#resourceVersion;
  }

  /** Whether it was found stale (a relist changed it) and its watch has not brought it forward since. */
  get stale(): boolean {
    return this.#staleness?.stale ?? false;
  }

  /** Calls `fn` once the first list is stored (at once if it already is). */
  whenSynced(fn: () => void): void {
    if (this.#synced) fn();
    else this.#onSynced.push(fn);
  }

  /** Runs until `signal` aborts. Never rejects. */
  async run(signal: AbortSignal): Promise<void> {
    const { log } = this.#o;
    const probing = this.#staleness?.run(signal);
    while (!signal.aborted) {
      const cycle = AbortSignal.any([signal, this.#cycle.signal]);
      try {
        if (this.#staleness?.takeRelist()) {
          this.#resourceVersion = undefined; // suspect: relist in pages, not the path watch events did not come by
          this.#fallback = true;
        }
        if (this.#resourceVersion === undefined && this.listMode === 'stream') {
          try {
            await this.#watch(cycle, true);
            continue;
          } catch (e) {
            if (signal.aborted) break;
            const err = toApiError(e);
            if (this.#resourceVersion !== undefined) throw err; // the list completed; the watch after it failed
            if (STREAM_AGAIN.has(err.code) || isResourceVersionTooLarge(err)) throw err; // back off, stream again
            // client-go's rule: making progress beats waiting for a streaming list that may never come; for this
            // cycle only (the server may be another apiserver next time, or the same one upgraded)
            this.#fallback = true;
            this.#failed(err, true); // a Forbidden stream: a paged list may pass, a watch will not
            log.info(
              { code: err.code, err: err.message },
              'the streaming list failed: listing in pages for this cycle',
            );
          }
        }
        if (this.#resourceVersion === undefined) await this.#list(cycle);
        await this.#watch(cycle, false);
      } catch (e) {
        if (signal.aborted) break;
        if (cycle.aborted) continue; // suspect while listing, watching or waiting: relist now
        const err = toApiError(e);
        this.#failed(err, this.#resourceVersion !== undefined);
        // a watch that stayed open for a while was a good answer from the server, whatever ended it
        if (this.#watchOpenedAt !== undefined && performance.now() - this.#watchOpenedAt >= HEALTHY_WATCH_MS)
          this.#healthy();
        this.#watchOpenedAt = undefined;
        if (err.code === 'Gone' || isResourceVersionTooLarge(err)) {
          const wait = this.#relistsSinceHealthy === 0 ? 0 : this.#relistBackoff.next();
          this.#relistsSinceHealthy += 1;
          log.info(
            { resourceVersion: this.#resourceVersion, relistInMs: wait },
            err.code === 'Gone'
              ? 'resourceVersion expired (410 Gone): relisting'
              : 'resourceVersion is newer than the server has (etcd restored?): relisting',
          );
          this.#o.metrics?.restarted('gone');
          this.#resourceVersion = undefined;
          if (wait > 0) await sleep(wait, signal);
          continue;
        }
        // the server said when to come back (429/503 with Retry-After, e.g. its storage still initializing after a
        // restart): then, not after a backoff grown by the outage before it
        const delay =
          err.retryAfterSeconds !== undefined
            ? Math.round(
                Math.min(RETRY_AFTER_MAX_MS, Math.max(500, err.retryAfterSeconds * 1000)) * (1 + Math.random() * 0.2),
              )
            : this.#backoff.next();
        const fields = { code: err.code, status: err.status, retryInMs: delay, attempt: this.#backoff.attempts };
        if (err.code === 'Inactive') {
          log.warn(fields, 'watch went silent: restarting it');
          this.#o.metrics?.restarted('inactivity');
        } else {
          // Not an error-level log: the reflector recovers by itself; the metric counts the failures.
          log.warn({ ...fields, err: err.message }, 'list/watch failed: retrying');
          this.#o.metrics?.restarted('error');
        }
        await sleep(delay, cycle);
      }
    }
    this.#staleness?.end();
    await probing;
  }

  /** Records a failed list or watch (`watch`: of a watch): for readiness, dynamic watches and the metric. */
  #failed(err: ApiError, watch: boolean): void {
    if (!this.#synced) this.#syncError = err;
    if (watch && err.code === 'Forbidden') this.#watchRefusal = err;
    this.#o.metrics?.failed(err.code);
  }

  async #list(signal: AbortSignal): Promise<void> {
    const o = this.#o;
    const items: T[] = [];
    let rv = '';
    const options: ListOptions & Masked = {
      ...(o.namespace ? { namespace: o.namespace } : {}),
      ...(o.labelSelector ? { labelSelector: o.labelSelector } : {}),
      ...(o.fieldSelector ? { fieldSelector: o.fieldSelector } : {}),
      ...(o.shardSelector ? { shardSelector: o.shardSelector } : {}),
      ...(o.pageSize ? { pageSize: o.pageSize } : {}),
      [MASK]: this.#mask,
      signal,
    };
    for await (const page of o.client.listPages(o.resource, options)) {
      if (page.restart) items.length = 0;
      for (const item of page.items)
        if (o.partition?.has(item) ?? true) items.push(o.transform ? o.transform(item) : item);
      rv = page.metadata.resourceVersion;
    }
    this.#listed(items, rv);
    this.#fallback = false;
  }

  /**
   * Whether the stored copy of `gone` (a DELETED event) is this reflector's to remove: always, unless it reads a
   * partition and the store's copy came from another one (the object moved to a partition whose ADDED came first).
   */
  #mine(gone: T): boolean {
    const p = this.#o.partition;
    if (!p) return true;
    const stored = this.#store.get(keyOf(gone));
    return stored === undefined || p.has(stored);
  }

  /** A full list is in: replace the store atomically, note its resourceVersion, report synced. */
  #listed(items: readonly T[], rv: string): void {
    const o = this.#o;
    const changed = this.#store.replace(items, o.namespace, o.partition);
    this.#resourceVersion = rv;
    this.#staleness?.settle(changed);
    this.#backoff.reset();
    o.metrics?.relisted();
    o.log.debug({ items: items.length, resourceVersion: rv, mode: this.listMode }, 'listed');
    if (!this.#synced) {
      this.#synced = true;
      this.#syncError = undefined;
      for (const fn of this.#onSynced.splice(0)) fn();
    }
  }

  /**
   * One watch. `initial`: a streaming list — the state arrives as events collected apart from the store until the
   * end-of-initial-events bookmark (then `#listed`), after which the same watch goes on as usual.
   */
  async #watch(signal: AbortSignal, initial: boolean): Promise<void> {
    const o = this.#o;
    let collecting: T[] | undefined = initial ? [] : undefined;
    const [min, max] = o.watchTimeoutSeconds ?? [30, 45];
    const timeoutSeconds = Math.floor(min + Math.random() * (max - min));
    const started = performance.now();
    this.#watchOpenedAt = undefined;
    let events = 0;
    const request: Omit<WatchRequest, 'bound'> & Masked = {
      [MASK]: this.#mask,
      namespace: o.namespace,
      labelSelector: o.labelSelector,
      fieldSelector: o.fieldSelector,
      shardSelector: o.shardSelector,
      resourceVersion: initial ? '' : (this.#resourceVersion ?? ''),
      sendInitialEvents: initial,
      timeoutSeconds,
      inactivityTimeoutMs: o.inactivityTimeoutMs ?? (timeoutSeconds + 15) * 1000,
      onOpen: () => {
        this.#watchOpenedAt = performance.now();
        this.#watchRefusal = undefined;
      },
      signal,
    };
    for await (const event of o.client.watch(o.resource, request)) {
      events += 1;
      o.metrics?.event(event.type);
      const rv = event.object.metadata?.resourceVersion;
      if (event.type === 'BOOKMARK') {
        if (collecting) {
          if (event.object.metadata?.annotations?.[INITIAL_EVENTS_END] !== 'true') continue;
          this.#listed(collecting, rv ?? '');
          collecting = undefined;
          continue;
        }
        if (rv) this.#resourceVersion = rv;
        continue;
      }
      const resource = o.resource.plural;
      const key = () => ({ resource, type: event.type, key: keyOf(event.object) });
      hop('event', key);
      const obj = o.transform ? o.transform(event.object) : event.object;
      const gone = event.type === 'DELETED' || (o.partition !== undefined && !o.partition.has(event.object));
      if (collecting) {
        if (!gone) collecting.push(obj);
        continue;
      }
      if (!gone) this.#store.upsert(obj);
      else if (this.#mine(obj)) this.#store.remove(obj);
      hop('stored', key);
      if (rv) this.#resourceVersion = rv;
      // something arrived: the error backoff starts over; the relist pacing only after a watch that lasted
      if (events === 1 || performance.now() - started > 60_000) this.#backoff.reset();
    }
    if (collecting) {
      // the watch ended without the bookmark: a server that ignores sendInitialEvents, or one that stopped mid-way
      throw new ApiError(
        'Unknown',
        `the streaming list of ${o.resource.plural} ended before its end-of-initial-events bookmark`,
      );
    }
    if (events === 0 && performance.now() - started < 1_000) {
      throw new ApiError('Unknown', `the watch of ${o.resource.plural} ended at once without an event`);
    }
    this.#healthy();
    o.metrics?.restarted('timeout');
  }

  /** A watch lasted (ran to its timeout, or stayed open for 5 s): the next outage or relist starts short again. */
  #healthy(): void {
    this.#backoff.reset();
    this.#relistBackoff.reset();
    this.#relistsSinceHealthy = 0;
  }
}
