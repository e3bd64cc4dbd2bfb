/**
 * @module cache/staleness
 * Stale-cache detection, as Kubernetes 1.36's checks of an informer's last synced resourceVersion (KEP-5647): a probe
 * that notices a cache that stopped advancing while the apiserver moved on, has it relisted, and reports it.
 *
 * Every `intervalMs` (default 30 s, jittered) the probe reads the apiserver's current resourceVersion with a one-item
 * list of the watch's resource and namespace (no selectors: one page of one item). A healthy watch reaches what the
 * apiserver had within about one watch lifetime: by its events, or by the bookmark the apiserver sends before the
 * watch's timeout (at most 45 s), also on a resource nobody writes — where the apiserver's watch cache follows etcd's
 * progress (Kubernetes 1.31+ serves consistent lists from it and asks etcd for progress; checked on 1.37). A cache
 * still behind a resourceVersion observed `afterMs` ago (default 90 s: two watch lifetimes) is suspect.
 *
 * Guarantees:
 * - A suspect cache is relisted in pages at once (its list or watch aborted): a list does not come by the path the
 *   events failed to (a stuck watch cache, an intermediary holding watch streams, a watch that ends on time and
 *   brings nothing). A silent connection alone is caught sooner by the watch's deadline (cache/reflector.ts).
 * - It is reported as stale only if the relist changed the store — the cache had missed something: counted in
 *   `opkit_watch_stale_total{resource}`, logged at warn level with both resourceVersions, how long and how many
 *   objects, and flagged (`stale`, the manager's `cache-fresh` readiness check) until its watch (or a later relist)
 *   brings it past the resourceVersion of its last relist: an event or a bookmark, its watch path works again. A
 *   cache whose watches fail with errors while lists pass is stale in this sense too, and reported so. A relist that changed nothing (an
 *   apiserver whose bookmarks lag behind etcd: older versions, one apiserver of several behind a load balancer) is
 *   logged at debug level and doubles the bound, up to 16 times, until a relist finds something again: such a cache
 *   costs one paged list per bound, never a report.
 * - The probe reads nothing before the reflector has synced or while a relist is due; a failed read judges nothing
 *   (logged at debug level; a Forbidden read at info level, once: the probe is then off in effect), and neither does
 *   a relist that fails (an outage of the apiserver flags nothing). resourceVersions
 *   that are not decimal integers turn the probe off, logged once.
 * Caveat: it costs one list request of one item per watch every `intervalMs`.
 */
import type { Client } from '../client/client.ts';
import { isApiError } from '../client/errors.ts';
import type { Kind, KubeObject } from '../client/resource.ts';
import { messageOf } from '../errors.ts';
import { sleep } from '../internal/sleep.ts';
import type { Logger } from '../logger.ts';

/** How a cache probes for staleness (`CacheOptions.staleness`); `false` turns it off. */
export interface StalenessOptions {
  /** How often the apiserver's resourceVersion is read, per watch (default 30 s). */
  readonly intervalMs?: number;
  /** How long the cache may stay behind a resourceVersion the apiserver had before it is suspect (default 90 s). */
  readonly afterMs?: number;
  /** Whether a manager fails its `cache-fresh` readiness check while a cache is stale (default true). */
  readonly readiness?: boolean;
}

export const DEFAULT_STALENESS_INTERVAL_MS = 30_000;
export const DEFAULT_STALE_AFTER_MS = 90_000;
/** How far the bound grows after relists that changed nothing. */
const MAX_BACKOFF = 16;

/** What the probe found: the cache behind `serverResourceVersion` for `behindMs`. */
export interface StaleVerdict {
  readonly cacheResourceVersion: string;
  readonly serverResourceVersion: string;
  readonly behindMs: number;
}

const DECIMAL = /^[0-9]{1,30}$/;

/**
 * The judgement, without I/O or timers: the apiserver's resourceVersions observed (those the cache has not reached),
 * and whether the cache is behind one observed `afterMs` ago or earlier.
 */
export class StalenessJudge {
  /** The current bound (grown after relists that changed nothing). */
  afterMs: number;
  /** Observations the cache had not reached when last asked, oldest first (resourceVersions ascending). */
  #pending: { readonly at: number; readonly rv: bigint; readonly text: string }[] = [];
  /** Set when a resourceVersion was not a decimal integer: nothing can be judged. */
  incomparable = false;

  constructor(afterMs: number) {
    this.afterMs = afterMs;
  }

  /** The apiserver was at `rv` at time `at` (ms). */
  observe(at: number, rv: string): void {
    if (!DECIMAL.test(rv)) {
      this.incomparable = true;
      return;
    }
    const value = BigInt(rv);
    const last = this.#pending.at(-1);
    if (last && last.rv >= value) return;
    this.#pending.push({ at, rv: value, text: rv });
  }

  /** Whether a cache at `cacheRv` is suspect at time `at`; observations it reached are dropped. */
  verdict(at: number, cacheRv: string | undefined): StaleVerdict | undefined {
    if (cacheRv === undefined) return undefined;
    if (!DECIMAL.test(cacheRv)) {
      this.incomparable = true;
      return undefined;
    }
    const cache = BigInt(cacheRv);
    while (this.#pending.length > 0 && (this.#pending[0]?.rv ?? 0n) <= cache) this.#pending.shift();
    const oldest = this.#pending[0];
    if (!oldest || at - oldest.at < this.afterMs) return undefined;
    return { cacheResourceVersion: cacheRv, serverResourceVersion: oldest.text, behindMs: at - oldest.at };
  }

  /** Forgets every observation (the cache is being relisted). */
  reset(): void {
    this.#pending = [];
  }
}

/** Whether resourceVersion `a` is later than `b` (both decimal). */
function after(a: string, b: string): boolean {
  return DECIMAL.test(a) && DECIMAL.test(b) && BigInt(a) > BigInt(b);
}

/** What the probe watches and acts on: one reflector. */
export interface StaleTarget {
  /** Whether its first list is stored. */
  synced(): boolean;
  /** Whether a relist is due (nothing to judge until it is stored). */
  relisting(): boolean;
  /** The resourceVersion of its last list, event or bookmark. */
  resourceVersion(): string | undefined;
  /**
   * Relists it in pages for `verdict`; resolves with how many objects the relist changed (it reports a change as
   * stale), or undefined if none was stored (the reflector stopped).
   */
  suspect(verdict: StaleVerdict): Promise<number | undefined>;
  /** Sets or clears the readiness flag. */
  flag(stale: boolean): void;
}

/** What the probe of one reflector reads with and reports to. */
export interface StalenessProbeOptions {
  /** The apiserver's current resourceVersion (undefined: no answer to judge by). */
  readonly read: (signal: AbortSignal) => Promise<string | undefined>;
  readonly log: Logger;
  readonly options: StalenessOptions;
}

/** Probes until `signal` aborts (see the module comment). Never rejects. */
export async function probeStaleness(
  target: StaleTarget,
  o: StalenessProbeOptions,
  signal: AbortSignal,
): Promise<void> {
  const intervalMs = o.options.intervalMs ?? DEFAULT_STALENESS_INTERVAL_MS;
  const baseMs = o.options.afterMs ?? DEFAULT_STALE_AFTER_MS;
  const judge = new StalenessJudge(baseMs);
  /** While flagged: the resourceVersion of its last relist, which only its watch can bring it past. */
  let listed: string | undefined;
  let flagged = false;
  let forbidden = false;
  while (!signal.aborted) {
    await sleep(intervalMs * (0.9 + Math.random() * 0.2), signal);
    if (signal.aborted) return;
    if (!target.synced() || target.relisting()) {
      judge.reset();
      continue;
    }
    const before = target.resourceVersion();
    if (flagged && listed !== undefined && before !== undefined && after(before, listed)) {
      flagged = false; // judged before the read: a watch that works again needs nothing from the apiserver
      target.flag(false);
      o.log.info({ resourceVersion: before }, 'the cache advances by its watch again');
    }
    let rv: string | undefined;
    try {
      rv = await o.read(signal);
    } catch (err) {
      if (signal.aborted) return;
      if (isApiError(err, 'Forbidden') && !forbidden) {
        forbidden = true;
        o.log.info({ err: messageOf(err) }, 'stale-cache probe: its one-item list is Forbidden, so it judges nothing');
      } else o.log.debug({ err: messageOf(err) }, 'stale-cache probe: the read failed');
      continue;
    }
    if (signal.aborted) return;
    if (rv === undefined) continue;
    const now = performance.now();
    const cacheRv = target.resourceVersion();
    const verdict = judge.verdict(now, cacheRv);
    judge.observe(now, rv);
    if (judge.incomparable) {
      o.log.info({ resourceVersion: rv }, 'resourceVersions are not decimal integers here: stale-cache probe off');
      return;
    }
    if (!verdict) continue;
    judge.reset();
    const changed = await target.suspect(verdict);
    if (changed === undefined) continue;
    if (flagged || changed > 0) listed = target.resourceVersion();
    if (changed > 0) {
      judge.afterMs = baseMs;
      flagged = true;
      target.flag(true);
    } else {
      judge.afterMs = Math.min(judge.afterMs * 2, baseMs * MAX_BACKOFF);
      o.log.debug(
        { ...verdict, nextAfterMs: judge.afterMs },
        'the cache looked behind, but a relist changed nothing: its bookmarks lag here; judging less often',
      );
    }
  }
}

/** What a reflector gives its `StaleWatch`. */
export interface StaleWatchOptions {
  readonly client: Client;
  readonly resource: Kind<KubeObject>;
  readonly namespace: string | undefined;
  readonly log: Logger;
  readonly options: StalenessOptions;
  /** Counts a stale cache (`opkit_watch_stale_total`). */
  readonly counted: (() => void) | undefined;
  readonly synced: () => boolean;
  readonly resourceVersion: () => string | undefined;
  /** Aborts the reflector's current list, watch or wait, so it relists at once. */
  readonly interrupt: () => void;
}

/**
 * One reflector's stale-cache state: its probe, the relist a suspicion asks for (`takeRelist`, then `settle` once a
 * list is stored), and its readiness flag (`stale`).
 */
export class StaleWatch implements StaleTarget {
  readonly #o: StaleWatchOptions;
  #suspicion: { readonly verdict: StaleVerdict; due: boolean; readonly resolve: (n?: number) => void } | undefined;
  #stale = false;
  #ended = false;

  constructor(options: StaleWatchOptions) {
    this.#o = options;
  }

  /** Whether it was found stale (a relist changed it) and its watch has not brought it forward since. */
  get stale(): boolean {
    return this.#stale;
  }

  /** Runs the probe until `signal` aborts. Never rejects. */
  run(signal: AbortSignal): Promise<void> {
    const { client, resource, namespace, log, options } = this.#o;
    const read = (s: AbortSignal) => serverResourceVersion(client, resource, namespace, s);
    return probeStaleness(this, { read, log, options }, signal);
  }

  synced(): boolean {
    return this.#o.synced();
  }

  relisting(): boolean {
    return this.#suspicion !== undefined || this.#o.resourceVersion() === undefined;
  }

  resourceVersion(): string | undefined {
    return this.#o.resourceVersion();
  }

  suspect(verdict: StaleVerdict): Promise<number | undefined> {
    if (this.#ended) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.#suspicion = { verdict, due: true, resolve };
      this.#o.interrupt();
    });
  }

  flag(stale: boolean): void {
    this.#stale = stale;
  }

  /** True once per suspicion: the reflector should list again, in pages, now. */
  takeRelist(): boolean {
    if (!this.#suspicion?.due) return false;
    this.#suspicion.due = false;
    return true;
  }

  /** A full list was stored, changing `changed` objects: a suspicion it answers is settled (a change: stale). */
  settle(changed: number): void {
    const s = this.#suspicion;
    if (!s || s.due) return;
    this.#suspicion = undefined;
    const { cacheResourceVersion, serverResourceVersion, behindMs } = s.verdict;
    const fields = { cacheResourceVersion, serverResourceVersion, behindSeconds: Math.round(behindMs / 1000), changed };
    if (changed > 0) {
      this.#o.counted?.();
      this.#o.log.warn(fields, 'the cache stopped advancing while the apiserver moved on: relisted in pages');
    }
    s.resolve(changed);
  }

  /** The reflector stopped: a suspicion waiting for its relist is answered with nothing. */
  end(): void {
    this.#ended = true;
    this.#suspicion?.resolve(undefined);
    this.#suspicion = undefined;
  }
}

/** The apiserver's current resourceVersion, from the first page (of one item) of a list of `resource`. */
export async function serverResourceVersion(
  client: Client,
  resource: Kind<KubeObject>,
  namespace: string | undefined,
  signal: AbortSignal,
): Promise<string | undefined> {
  const pages = client.listPages(resource, { ...(namespace ? { namespace } : {}), pageSize: 1, signal });
  for await (const page of pages) return page.metadata.resourceVersion || undefined;
  return undefined;
}
