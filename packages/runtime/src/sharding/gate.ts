/**
 * @module sharding/gate
 * Which requests this replica reconciles now: those whose object's shard (by the scheme's rule, scheme.ts) is active
 * here, while this replica's member Lease is fresh. The gate is what a sharded controller asks before each reconcile
 * (`RequestGate`), what each request of an admitted reconcile asks right before it is sent (the ticket's `guard`), and
 * what a hand-off drains.
 *
 * Guarantees:
 * - A request is admitted only while its shard is active and `holds()` answers true (the member Lease is fresh by the
 *   monotonic clock at that moment; asking may stop every shard, as a stale Lease does). An admitted reconcile's
 *   requests are refused (`Aborted`) from the moment its ticket is withdrawn, or `holds()` answers false: the check
 *   runs where the work starts and before each request, never only in a timer that may run late after a pause.
 * - `deactivate(s)` admits nothing of `s` from then on, and `drained(s)` resolves once every admitted reconcile of `s`
 *   has ended; `abort(s)` aborts their signals (and with them their requests), `abortAll()` those of every shard,
 *   active or draining. A shard's signal is a new one each time it is activated.
 * - One object, one replica: `left(key, shard)` aborts at once the reconciles of an object that left for a shard not
 *   active here (relabelled, or deleted); `arrived(key)` holds back the requests of an object that came into an active
 *   shard after it was listed (a relabelling, by the look of it) for `holdMs` — the old holder's bound for noticing the
 *   move and aborting — answering `retryAfterMs` until then; `hold(key, until, maxMs)` holds them back until a
 *   promise settles (a child of theirs being given its label back), `maxMs` at most.
 */

import type { Partitioning } from '../cache/partitioning.ts';
import type { Kind, KubeObject } from '../client/resource.ts';
import type { GateAnswer, RequestGate } from '../controller/controller.ts';
import { SHARD_LABEL } from '../helpers/shardlabel.ts';
import { type Clock, realClock } from '../workqueue/index.ts';
import { LABELS, type ShardScheme } from './scheme.ts';

/** What a gate is made with. */
export interface ShardGateOptions {
  /** Whether this replica may act now (its member Lease fresh); asked before each admission and each request. */
  readonly holds?: () => boolean;
  /** How long an object that arrived in an active shard by relabelling is held back (default 3 s). */
  readonly holdMs?: number;
  /** The monotonic clock the holds are timed on. */
  readonly clock?: Clock;
  /** The scheme in force (default: `labels`); asked each time, as it is decided when sharding starts. */
  readonly scheme?: () => ShardScheme;
  /** How a kind's caches are partitioned in `role` (`RequestGate.partitioning`); default: the scheme's. */
  readonly partitioning?: (role: 'primary' | 'owned', kind: Kind) => Partitioning;
}

/** Why the requests of a reconcile were refused: the Lease went stale, or its ticket was withdrawn. */
function refusal(why: string): DOMException {
  return new DOMException(`sharding: ${why}`, 'AbortError');
}

/** The shards active on this replica and the reconciles under way in each. */
export class ShardGate implements RequestGate {
  readonly #holds: () => boolean;
  readonly #holdMs: number;
  readonly #clock: Clock;
  readonly #scheme: () => ShardScheme;
  readonly #partitioning: (role: 'primary' | 'owned', kind: Kind) => Partitioning;
  readonly #active = new Map<number, AbortController>();
  /** Shards deactivated while reconciles of theirs were under way: what aborts those. */
  readonly #draining = new Map<number, AbortController>();
  readonly #inFlight = new Map<number, number>();
  readonly #idle = new Map<number, (() => void)[]>();
  /** The reconciles under way, by object key: their shard and what aborts them alone. */
  readonly #byKey = new Map<string, { shard: number; ctl: AbortController }>();
  /** Objects held back after an arrival by relabelling: until when (monotonic). */
  readonly #held = new Map<string, number>();

  constructor(options: ShardGateOptions = {}) {
    this.#holds = options.holds ?? (() => true);
    this.#holdMs = options.holdMs ?? 3_000;
    this.#clock = options.clock ?? realClock;
    this.#scheme = options.scheme ?? (() => LABELS);
    this.#partitioning = options.partitioning ?? ((role) => this.scheme.partitioning(role));
  }

  /** The scheme in force. */
  get scheme(): ShardScheme {
    return this.#scheme();
  }

  /** See `RequestGate.partitioning`. */
  partitioning(role: 'primary' | 'owned', kind: Kind): Partitioning {
    return this.#partitioning(role, kind);
  }

  /** The shard a primary object is in; undefined when it has none. */
  shardOf(obj: KubeObject | undefined): number | undefined {
    return this.#scheme().shardOf(obj);
  }

  /** Whether requests of shard `s` are admitted now (the Lease not asked). */
  isActive(s: number): boolean {
    return this.#active.has(s);
  }

  /** The active shards. */
  get active(): number[] {
    return [...this.#active.keys()].sort((x, y) => x - y);
  }

  /**
   * Throws (an `AbortError`) unless this replica may write for shard `s` now: its Lease fresh and `s` active. For
   * writes outside a reconcile (labelling), as a client guard.
   */
  check(s: number): void {
    if (!this.#holds()) throw refusal('the member Lease is not fresh');
    if (!this.#active.has(s)) throw refusal(`shard ${s} is not active here`);
  }

  /** Admits a request of an object in an active shard; see `RequestGate`. */
  admit(key: string, obj: KubeObject | undefined): GateAnswer {
    const s = this.shardOf(obj);
    if (s === undefined || !this.#holds()) return undefined;
    const shardCtl = this.#active.get(s);
    if (!shardCtl) return undefined;
    const until = this.#held.get(key);
    if (until !== undefined) {
      const left = until - this.#clock.now();
      // asked again soon: a hold on a promise ends when it settles
      if (left > 0) return { retryAfterMs: Math.min(Math.ceil(left), 100) };
      this.#held.delete(key);
    }
    const ctl = new AbortController();
    const signal = AbortSignal.any([shardCtl.signal, ctl.signal]);
    const mine = { shard: s, ctl };
    this.#byKey.set(key, mine);
    this.#inFlight.set(s, (this.#inFlight.get(s) ?? 0) + 1);
    let ended = false;
    return {
      signal,
      labels: { [SHARD_LABEL]: this.scheme.labelValue(s) },
      guard: () => {
        if (!this.#holds()) throw refusal('the member Lease is not fresh');
        if (signal.aborted) throw signal.reason;
      },
      end: () => {
        if (ended) return;
        ended = true;
        if (this.#byKey.get(key) === mine) this.#byKey.delete(key);
        const left = (this.#inFlight.get(s) ?? 1) - 1;
        if (left > 0) this.#inFlight.set(s, left);
        else {
          this.#inFlight.delete(s);
          this.#draining.delete(s);
          for (const fn of this.#idle.get(s)?.splice(0) ?? []) fn();
        }
      },
    };
  }

  /**
   * The object of `key` is now in shard `now` (undefined: it left every partition here — relabelled away or deleted):
   * unless `now` is active here, its reconcile under way (if any) aborts at once.
   */
  left(key: string, now: number | undefined): void {
    const r = this.#byKey.get(key);
    if (!r || (now !== undefined && this.#active.has(now))) return;
    r.ctl.abort(refusal(`the object left shard ${r.shard}`));
  }

  /** The object of `key` came into an active shard after its initial list: hold its requests back for `holdMs`. */
  arrived(key: string): void {
    this.#held.set(key, this.#clock.now() + this.#holdMs);
  }

  /** Holds the requests of `key` back until `until` settles, for `maxMs` at most. */
  hold(key: string, until: Promise<unknown>, maxMs: number): void {
    const at = this.#clock.now() + maxMs;
    this.#held.set(key, Math.max(at, this.#held.get(key) ?? 0));
    void until.finally(() => {
      if (this.#held.get(key) === at) this.#held.delete(key);
    });
  }

  /** Admits `s`'s requests from now on. */
  activate(s: number): void {
    if (!this.#active.has(s)) this.#active.set(s, new AbortController());
  }

  /** Admits none of `s`'s requests from now on (those admitted go on: see `drained` and `abort`). */
  deactivate(s: number): void {
    const ctl = this.#active.get(s);
    this.#active.delete(s);
    if (ctl && this.#inFlight.has(s)) this.#draining.set(s, ctl);
    this.#forgetHolds();
  }

  /** Aborts the signals of `s`'s reconciles under way (it must have been deactivated first, or it is too). */
  abort(s: number, reason: unknown): void {
    this.deactivate(s);
    this.#draining.get(s)?.abort(reason);
  }

  /** Deactivates every shard and aborts every reconcile under way, now. */
  abortAll(reason: unknown): void {
    for (const s of [...this.#active.keys()]) this.deactivate(s);
    for (const ctl of this.#draining.values()) ctl.abort(reason);
  }

  /** Resolves once no admitted reconcile of `s` is under way. */
  drained(s: number): Promise<void> {
    if (!this.#inFlight.has(s)) return Promise.resolve();
    return new Promise((resolve) => {
      const list = this.#idle.get(s) ?? [];
      list.push(resolve);
      this.#idle.set(s, list);
    });
  }

  /** How many admitted reconciles of `s` are under way. */
  inFlight(s: number): number {
    return this.#inFlight.get(s) ?? 0;
  }

  /** Drops the holds that have run out (kept small: an entry lives `holdMs`). */
  #forgetHolds(): void {
    const now = this.#clock.now();
    for (const [key, until] of this.#held) if (until <= now) this.#held.delete(key);
  }
}
