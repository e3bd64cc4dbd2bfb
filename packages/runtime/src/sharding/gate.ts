/**
 * @module sharding/gate
 * Which requests this replica reconciles now: those whose object's bucket (its `opkit.dev/shard` label) is active
 * here. The gate is what a sharded controller asks before each reconcile (`RequestGate`), and what a hand-off drains.
 *
 * Guarantees: a request is admitted only while its bucket is active; `deactivate(b)` admits nothing of `b` from then
 * on, and `drained(b)` resolves once every admitted reconcile of `b` has ended; `abort(b)` aborts their signals (and
 * with them their requests to the apiserver), `abortAll()` those of every bucket, active or draining. A bucket's signal
 * is a new one each time it is activated.
 */

import type { KubeObject } from '../client/resource.ts';
import type { RequestGate, RequestTicket } from '../controller/controller.ts';
import { bucketOfLabel, SHARD_LABEL } from './ring.ts';

/** The buckets active on this replica and the reconciles under way in each. */
export class ShardGate implements RequestGate {
  readonly partitionLabel = SHARD_LABEL;
  readonly #active = new Map<number, AbortController>();
  /** Buckets deactivated while reconciles of theirs were under way: what aborts those. */
  readonly #draining = new Map<number, AbortController>();
  readonly #inFlight = new Map<number, number>();
  readonly #idle = new Map<number, (() => void)[]>();

  /** The bucket an object is in, by its label; undefined when it has none. */
  static bucketOf(obj: KubeObject | undefined): number | undefined {
    return bucketOfLabel(obj?.metadata.labels?.[SHARD_LABEL]);
  }

  /** Whether requests of bucket `b` are admitted now. */
  isActive(b: number): boolean {
    return this.#active.has(b);
  }

  /** The active buckets. */
  get active(): number[] {
    return [...this.#active.keys()].sort((x, y) => x - y);
  }

  /** Admits a request of an object in an active bucket; see `RequestGate`. */
  admit(_key: string, obj: KubeObject | undefined): RequestTicket | undefined {
    const b = ShardGate.bucketOf(obj);
    const ctl = b === undefined ? undefined : this.#active.get(b);
    if (b === undefined || !ctl) return undefined;
    this.#inFlight.set(b, (this.#inFlight.get(b) ?? 0) + 1);
    let ended = false;
    return {
      signal: ctl.signal,
      end: () => {
        if (ended) return;
        ended = true;
        const left = (this.#inFlight.get(b) ?? 1) - 1;
        if (left > 0) this.#inFlight.set(b, left);
        else {
          this.#inFlight.delete(b);
          this.#draining.delete(b);
          for (const fn of this.#idle.get(b)?.splice(0) ?? []) fn();
        }
      },
    };
  }

  /** Admits `b`'s requests from now on. */
  activate(b: number): void {
    if (!this.#active.has(b)) this.#active.set(b, new AbortController());
  }

  /** Admits none of `b`'s requests from now on (those admitted go on: see `drained` and `abort`). */
  deactivate(b: number): void {
    const ctl = this.#active.get(b);
    this.#active.delete(b);
    if (ctl && this.#inFlight.has(b)) this.#draining.set(b, ctl);
  }

  /** Aborts the signals of `b`'s reconciles under way (it must have been deactivated first, or it is too). */
  abort(b: number, reason: unknown): void {
    this.deactivate(b);
    this.#draining.get(b)?.abort(reason);
  }

  /** Deactivates every bucket and aborts every reconcile under way, now. */
  abortAll(reason: unknown): void {
    for (const b of [...this.#active.keys()]) this.deactivate(b);
    for (const ctl of this.#draining.values()) ctl.abort(reason);
  }

  /** Resolves once no admitted reconcile of `b` is under way. */
  drained(b: number): Promise<void> {
    if (!this.#inFlight.has(b)) return Promise.resolve();
    return new Promise((resolve) => {
      const list = this.#idle.get(b) ?? [];
      list.push(resolve);
      this.#idle.set(b, list);
    });
  }

  /** How many admitted reconciles of `b` are under way. */
  inFlight(b: number): number {
    return this.#inFlight.get(b) ?? 0;
  }
}
