/**
 * @module helpers/events
 * An EventRecorder for `kubectl describe`: writes core/v1 Events about an object with the controller as source.
 *
 * Guarantees:
 * - Repeats aggregate: the same (object, type, reason, message) patches the existing Event's `count` and
 *   `lastTimestamp` instead of creating a new object (if that Event expired meanwhile, a new one is created).
 * - Rate limited per object and source, like client-go's spam filter: a burst of 25, then one event per 5 minutes;
 *   the excess is dropped (counted in `dropped`), so a failing reconcile cannot flood the cluster.
 * - Never throws and never blocks a reconcile: writes happen in the background, one at a time per Event; failures are
 *   logged at debug level.
 * - `flush(timeoutMs)` waits for the writes under way, but never longer than `timeoutMs`: then it cancels the rest, so
 *   a process stopping on a hung connection (a lost Lease, a SIGTERM) exits on time instead of waiting for the
 *   client's request timeout.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Event, Events } from '../client/builtins.ts';
import type { Client } from '../client/client.ts';
import { isApiError } from '../client/errors.ts';
import type { KubeObject, ResourceType } from '../client/resource.ts';
import type { Logger } from '../logger.ts';

export type EventType = 'Normal' | 'Warning';

/** The longest a Node timer can wait (2^31 − 1 ms); a longer flush timeout means no limit. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface EventRecorderOptions {
  readonly client: Client;
  /** The source component (the controller's name). */
  readonly component: string;
  readonly log: Logger;
  /** Per object: burst (default 25) and refill interval (default 5 min). */
  readonly burst?: number;
  readonly refillMs?: number;
  /** How many distinct Events to remember for aggregation (default 4096). */
  readonly cacheSize?: number;
}

interface Aggregate {
  namespace: string;
  name: string;
  count: number;
  pending: Promise<void>;
}

export class EventRecorder {
  readonly #o: EventRecorderOptions;
  readonly #host = hostname();
  readonly #aggregates = new Map<string, Aggregate>();
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  #dropped = 0;
  #inFlight = new Set<Promise<void>>();
  /** Aborts the writes recorded so far when a flush gives up on them (then replaced for later events). */
  #cancel = new AbortController();

  constructor(options: EventRecorderOptions) {
    this.#o = options;
  }

  /** Events dropped by the rate limit so far. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Records an event about `obj` (of kind `r`). `reason` is a short CamelCase word; `message` a sentence. */
  event<T extends KubeObject>(r: ResourceType<T>, obj: T, type: EventType, reason: string, message: string): void {
    const uid = obj.metadata.uid ?? '';
    if (!this.#allow(uid)) {
      this.#dropped += 1;
      this.#o.log.debug({ reason, object: obj.metadata.name }, 'event dropped by the rate limit');
      return;
    }
    const key = `${uid}\u0000${type}\u0000${reason}\u0000${message}`;
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    let agg = this.#aggregates.get(key);
    if (!agg) {
      agg = { namespace: '', name: '', count: 0, pending: Promise.resolve() };
      this.#remember(key, agg);
    }
    const a = agg;
    const { signal } = this.#cancel;
    // Writes of one Event are chained, so repeats patch the Event the first write created.
    const pending = a.pending.then(async () => {
      try {
        if (a.count > 0) {
          try {
            await this.#o.client.patch(
              Events,
              { namespace: a.namespace, name: a.name },
              { count: a.count + 1, lastTimestamp: now },
              { signal },
            );
            a.count += 1;
            return;
          } catch (err) {
            if (!isApiError(err, 'NotFound')) throw err; // the Event expired: create a new one
          }
        }
        const created = await this.#o.client.create(Events, this.#build(r, obj, type, reason, message, now), {
          signal,
        });
        a.namespace = created.metadata.namespace ?? 'default';
        a.name = created.metadata.name ?? '';
        a.count = 1;
      } catch (err) {
        this.#o.log.debug({ err: (err as Error).message, reason }, 'could not write an event');
      }
    });
    a.pending = pending;
    this.#inFlight.add(pending);
    void pending.finally(() => this.#inFlight.delete(pending));
  }

  /**
   * Resolves when every event recorded so far has been written or given up on — after `timeoutMs` at the latest
   * (default: no limit), cancelling the writes still under way. Returns how many were cancelled.
   */
  async flush(timeoutMs = Infinity): Promise<number> {
    const limited = timeoutMs < MAX_TIMER_MS; // longer than a timer can wait: no limit
    const deadline = Date.now() + timeoutMs;
    while (this.#inFlight.size > 0) {
      const all = Promise.all([...this.#inFlight]).then(() => true);
      if (!limited) {
        await all;
        continue;
      }
      const timer = new AbortController();
      const timedOut = sleep(Math.max(0, deadline - Date.now()), false, { signal: timer.signal, ref: false }).catch(
        () => false,
      );
      const written = await Promise.race([all, timedOut]);
      timer.abort();
      if (written) continue;
      const cancelled = this.#inFlight.size;
      this.#cancel.abort(new Error('event recorder flush timed out'));
      this.#cancel = new AbortController();
      await Promise.all([...this.#inFlight]);
      this.#o.log.info({ cancelled, timeoutMs }, 'stopped writing events still under way');
      return cancelled;
    }
    return 0;
  }

  #build<T extends KubeObject>(
    r: ResourceType<T>,
    obj: T,
    type: EventType,
    reason: string,
    message: string,
    now: string,
  ): Event {
    const namespace = obj.metadata.namespace ?? 'default';
    return {
      metadata: { namespace, name: `${obj.metadata.name}.${randomBytes(8).toString('hex')}` },
      involvedObject: {
        apiVersion: r.apiVersion,
        kind: r.kind,
        name: obj.metadata.name ?? '',
        ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}),
        ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}),
        ...(obj.metadata.resourceVersion ? { resourceVersion: obj.metadata.resourceVersion } : {}),
      },
      type,
      reason,
      message: message.length > 1024 ? `${message.slice(0, 1021)}...` : message,
      source: { component: this.#o.component, host: this.#host },
      reportingComponent: this.#o.component,
      reportingInstance: this.#host,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
  }

  #remember(key: string, agg: Aggregate): void {
    this.#aggregates.set(key, agg);
    const max = this.#o.cacheSize ?? 4096;
    if (this.#aggregates.size > max) {
      const oldest = this.#aggregates.keys().next().value;
      if (oldest !== undefined) this.#aggregates.delete(oldest);
    }
  }

  #allow(objectUid: string): boolean {
    const burst = this.#o.burst ?? 25;
    const refillMs = this.#o.refillMs ?? 300_000;
    const now = Date.now();
    const b = this.#buckets.get(objectUid) ?? { tokens: burst, at: now };
    b.tokens = Math.min(burst, b.tokens + (now - b.at) / refillMs);
    b.at = now;
    this.#buckets.set(objectUid, b);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    if (this.#buckets.size > (this.#o.cacheSize ?? 4096)) {
      const oldest = this.#buckets.keys().next().value;
      if (oldest !== undefined && oldest !== objectUid) this.#buckets.delete(oldest);
    }
    return true;
  }
}
