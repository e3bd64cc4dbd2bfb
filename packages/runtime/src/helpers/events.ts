/**
 * @module helpers/events
 * An EventRecorder for `kubectl events` and `kubectl describe`, with the semantics of client-go's events.k8s.io/v1
 * recorder (the one controller-runtime's new `GetEventRecorder` returns): each Event names its `regarding` object, an
 * optional `related` one, the `reportingController`, the `reportingInstance` and the `action` taken; repeats become a
 * series.
 *
 * Guarantees:
 * - API: events.k8s.io/v1 when the apiserver serves it (asked once, by discovery); core/v1 Events otherwise, with the
 *   same fields (`action`, `related`, `reportingComponent`) and `count` / `lastTimestamp` in place of the series.
 * - Series: keyed as client-go's events/v1 recorder keys them — action, reason, reportingController, regarding and
 *   related (whole references, resourceVersion included); not the type or the note. A repeat within 6 minutes of the
 *   last one patches the existing Event's `series.count` and `series.lastObservedTime` instead of creating an object,
 *   and the Event keeps its first note; after 6 quiet minutes, or when the Event expired meanwhile, a new Event is
 *   created (carrying the count so far, as client-go does). Repeats recorded while a write is under way are folded
 *   into the next write, so a burst costs at most one create and one patch in flight at a time per series.
 * - Every occurrence is counted: 100 repeats end as a count of 100 on the server. What is rate limited is the writes,
 *   per regarding object (a burst of 25, then one per 5 minutes, the pace of client-go's spam filter), so a failing
 *   reconcile cannot flood the cluster: a repeat over the limit is held back, folded into the series' next write, and
 *   written once the object's limit allows (one write per held series per refill, oldest first), or by `flush()`. A
 *   new Event (not a repeat of a series) for an object over its limit is dropped and counted in `dropped`.
 * - Never throws and never blocks a reconcile: writes happen in the background, one at a time per series; failures
 *   are logged at debug level, except the first refusal for lack of RBAC (an install whose ClusterRole predates
 *   events.k8s.io), a warning naming the missing rule. Notes longer than 1 kB are cut to fit the API's limit.
 * - `flush(timeoutMs)` writes the counts held back by the rate limit at once (a stopping process would lose them) and
 *   waits for the writes under way, but never longer than `timeoutMs`: then it cancels the rest, so a process stopping
 *   on a hung connection (a lost Lease, a SIGTERM) exits on time instead of waiting for the client's request timeout.
 *   `flush(0)` (a process that must stop acting) starts no write: it leaves the held-back counts unwritten and
 *   cancels the writes under way. The timer of held-back writes does not keep a process alive.
 * - Holding a series back costs the same however many are held (the timer is re-armed only when the new series' token
 *   comes before it); the timer fires at the earliest time a held series' object has a token again.
 *
 * The recorder keeps the series and decides when each is written; helpers/eventwriter writes one (API, body, create
 * or patch), helpers/eventlimit is the per-object write budget.
 *
 * RBAC: `create` and `patch` on `events.k8s.io` events (see `managerPermissions`); the core/v1 fallback, for
 * apiservers older than 1.19, needs the same verbs on core `events`.
 */
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '../client/client.ts';
import type { Kind, KubeObject } from '../client/resource.ts';
import type { Logger } from '../logger.ts';
import { type Clock, realClock, type Timer } from '../workqueue/clock.ts';
import { WriteBudget } from './eventlimit.ts';
import { EventWriter, type WrittenSeries } from './eventwriter.ts';

/** An Event's type: `Normal`, or `Warning` for something an operator of the cluster should look at. */
export type EventType = 'Normal' | 'Warning';

/** The object an Event is about (`regarding`) or relates to (`related`): an ObjectReference. */
export interface EventObjectReference {
  /** The object's `apiVersion`. */
  readonly apiVersion: string;
  /** The object's kind. */
  readonly kind: string;
  /** The object's name. */
  readonly name: string;
  /** The object's namespace (none when cluster-scoped). */
  readonly namespace?: string;
  /** The object's UID. */
  readonly uid?: string;
  /** The object's resourceVersion when the Event was recorded. */
  readonly resourceVersion?: string;
}

/** The reference to `obj` (of kind `r`) an Event carries. */
export function objectReference<T extends KubeObject>(r: Kind<T>, obj: T): EventObjectReference {
  return {
    apiVersion: r.apiVersion,
    kind: r.kind,
    name: obj.metadata.name ?? '',
    ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}),
    ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}),
    ...(obj.metadata.resourceVersion ? { resourceVersion: obj.metadata.resourceVersion } : {}),
  };
}

/** Optional fields of one Event. */
export interface EventOptions {
  /** What was done or failed (e.g. `Scale`, `CreatePod`); at most 128 characters. Default `NoneSpecified`. */
  readonly action?: string;
  /** A second object the Event concerns (e.g. the Pod a scale-up created). */
  readonly related?: EventObjectReference;
}

/** What the recorder needs of a client (a `Client`, or a fake in tests). */
export type EventClient = Pick<Client, 'create' | 'patch' | 'serverResources'>;

/** Options of an `EventRecorder`; `client`, `component` and `log` are required. */
export interface EventRecorderOptions {
  /** Where Events are written (needs `create` and `patch` on events, and discovery). */
  readonly client: EventClient;
  /** The reporting controller (the controller's or the manager's name), a qualified name such as `appservice`. */
  readonly component: string;
  /** The reporting instance (default `<component>-<hostname>`, as client-go). */
  readonly instance?: string;
  /** Where write failures are logged (at debug level; a missing RBAC rule once at warn). */
  readonly log: Logger;
  /** Writes per regarding object: burst (default 25) and refill interval (default 5 min). */
  readonly burst?: number;
  /** How often an object's write budget regains one write (default 5 min). */
  readonly refillMs?: number;
  /** How many distinct series to remember (default 4096). */
  readonly cacheSize?: number;
  /** Time in ms since the epoch, and the timer of held-back writes (default: the real clock). */
  readonly clock?: Clock;
}

/** client-go's default action when a caller names none. */
export const DEFAULT_ACTION = 'NoneSpecified';
/** A series ends after this long without a repeat (client-go's `finishTime`). */
export const SERIES_IDLE_MS = 6 * 60_000;
/** The API's limit on an Event's note (`message`). */
const NOTE_LIMIT = 1024;
/** The longest a Node timer can wait (2^31 − 1 ms); a longer flush timeout means no limit. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** One series: what was recorded, where it was written, and its place in the write budget. */
interface Series extends WrittenSeries {
  /** The regarding object's rate-limit bucket. */
  readonly bucket: string;
  /** A write loop runs for this series (it picks up every count recorded meanwhile). */
  writing: boolean;
  /** The next write already has its token (a new series' create, taken when it was recorded; a released one). */
  granted: boolean;
  /** Held back by the rate limit until the bucket has a token (or a flush). */
  held: boolean;
}

/**
 * Records Events as client-go's events.k8s.io/v1 recorder does: repeats become series, writes are rate limited per
 * object and happen in the background. See the module comment for its guarantees.
 *
 * @showModuleComment
 */
export class EventRecorder {
  readonly #o: EventRecorderOptions;
  readonly #writer: EventWriter;
  readonly #budget: WriteBudget;
  readonly #clock: Clock;
  readonly #series = new Map<string, Series>();
  /** Series whose counts wait for a token, oldest first. */
  readonly #held = new Set<Series>();
  /** Set for when the first held series' bucket has a token again. */
  #timer: { readonly at: number; readonly timer: Timer } | undefined;
  #dropped = 0;
  #inFlight = new Set<Promise<void>>();
  /** Aborts the writes recorded so far when a flush gives up on them (then replaced for later events). */
  #cancel = new AbortController();

  constructor(options: EventRecorderOptions) {
    this.#o = options;
    const instance = (options.instance ?? `${options.component}-${hostname()}`).slice(0, 128);
    this.#writer = new EventWriter({
      client: options.client,
      component: options.component,
      instance,
      log: options.log,
    });
    this.#clock = options.clock ?? realClock;
    const clock = this.#clock;
    this.#budget = new WriteBudget({
      ...(options.burst === undefined ? {} : { burst: options.burst }),
      ...(options.refillMs === undefined ? {} : { refillMs: options.refillMs }),
      ...(options.cacheSize === undefined ? {} : { cacheSize: options.cacheSize }),
      now: () => clock.now(),
    });
  }

  /** New Events dropped by the rate limit so far (repeats of a series are never dropped). */
  get dropped(): number {
    return this.#dropped;
  }

  /**
   * Records an event about `obj` (of kind `r`). `reason` is a short CamelCase word (why), `message` a sentence (the
   * note); `options.action` says what was done and `options.related` names a second object.
   */
  event<T extends KubeObject>(
    r: Kind<T>,
    obj: T,
    type: EventType,
    reason: string,
    message: string,
    options: EventOptions = {},
  ): void {
    const regarding = objectReference(r, obj);
    const now = this.#clock.now();
    const bucket = regarding.uid ?? `${regarding.namespace ?? ''}/${regarding.name}`;
    const action = (options.action ?? DEFAULT_ACTION).slice(0, 128);
    const note = truncate(message);
    const related = options.related;
    // client-go's events/v1 series key: action, reason, reportingController (this recorder's), regarding and related
    // (the whole references); neither the type nor the note — a repeat with another note counts in the series
    const key = [action, reason, referenceKey(regarding), related ? referenceKey(related) : ''].join('\u0000');
    let s = this.#series.get(key);
    if (s && now - s.last > SERIES_IDLE_MS) s = undefined; // the series ended: start a new Event
    if (!s) {
      // a new Event needs a write now: over the object's limit, it is dropped (client-go's spam filter)
      if (!this.#budget.take(bucket, now)) {
        this.#dropped += 1;
        this.#o.log.debug({ reason, object: regarding.name }, 'event dropped by the rate limit');
        return;
      }
      s = {
        regarding,
        related,
        type,
        reason: reason.slice(0, 128),
        action,
        note,
        first: now,
        last: now,
        count: 0,
        written: 0,
        ref: undefined,
        bucket,
        writing: false,
        granted: true,
        held: false,
      };
      this.#remember(key, s);
    }
    s.count += 1;
    s.last = now;
    this.#kick(s);
  }

  /** Starts the series' write loop, unless it runs already or the series is held back. */
  #kick(s: Series): void {
    if (s.writing || s.held) return;
    s.writing = true;
    const running = this.#drain(s, this.#cancel.signal);
    this.#inFlight.add(running);
    void running.finally(() => this.#inFlight.delete(running));
  }

  /**
   * Writes until the server's Event reports every occurrence recorded: each write takes a token of the object's
   * bucket; without one the series is held back. A failed write ends the loop (the next occurrence tries again).
   */
  async #drain(s: Series, signal: AbortSignal): Promise<void> {
    try {
      await undefined; // occurrences recorded in the same turn go out in one write
      while (s.count !== s.written && !signal.aborted) {
        if (!s.granted && !this.#budget.take(s.bucket, this.#clock.now())) {
          this.#hold(s);
          return;
        }
        s.granted = false;
        try {
          await this.#writer.write(s, signal);
        } catch (err) {
          this.#writer.failed(err, s);
          return;
        }
      }
    } finally {
      s.writing = false; // in the same turn as the last check: a count recorded after it starts a new loop
    }
  }

  #hold(s: Series): void {
    s.held = true;
    this.#held.add(s);
    // the timer is at the earliest token of the series held before: only this one can come sooner
    const at = this.#budget.tokenAt(s.bucket);
    if (this.#timer === undefined || at < this.#timer.at) this.#armAt(at);
  }

  /** Restarts the held series whose bucket has a token again (every one, when `all`: a flush), then re-arms. */
  #release(all: boolean): void {
    const now = this.#clock.now();
    for (const s of [...this.#held]) {
      if (!all && !this.#budget.take(s.bucket, now)) continue;
      this.#held.delete(s);
      s.held = false;
      s.granted = true;
      this.#kick(s);
    }
    this.#arm();
  }

  /**
   * Sets the timer for the earliest time a held series' bucket has a token (scanning them all: after a release, which
   * took tokens), or clears it when none is held.
   */
  #arm(): void {
    let at = Infinity;
    for (const s of this.#held) at = Math.min(at, this.#budget.tokenAt(s.bucket));
    if (at === Infinity) {
      this.#timer?.timer.cancel();
      this.#timer = undefined;
      return;
    }
    if (this.#timer !== undefined && this.#timer.at <= at) return;
    this.#armAt(at);
  }

  /** (Re-)sets the timer of held-back writes for `at`. */
  #armAt(at: number): void {
    this.#timer?.timer.cancel();
    const timer = this.#clock.setTimer(at - this.#clock.now(), () => {
      this.#timer = undefined;
      this.#release(false);
    });
    this.#timer = { at, timer };
  }

  /**
   * Writes the counts the rate limit held back, and resolves when every event recorded so far has been written or
   * given up on — after `timeoutMs` at the latest (default: no limit), cancelling the writes still under way. Returns
   * how many were cancelled. `flush(0)` starts no write: the held-back counts stay held, the writes under way are
   * cancelled.
   */
  async flush(timeoutMs = Infinity): Promise<number> {
    if (timeoutMs > 0) this.#release(true); // with no time to write, starting writes would only cancel them
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
      this.#cancel.abort(new DOMException('event recorder flush timed out', 'TimeoutError'));
      this.#cancel = new AbortController();
      await Promise.all([...this.#inFlight]);
      this.#o.log.info({ cancelled, timeoutMs }, 'stopped writing events still under way');
      return cancelled;
    }
    return 0;
  }

  #remember(key: string, s: Series): void {
    this.#series.delete(key);
    this.#series.set(key, s);
    const max = this.#o.cacheSize ?? 4096;
    if (this.#series.size > max) {
      const oldest = this.#series.keys().next().value;
      if (oldest !== undefined) this.#series.delete(oldest);
    }
  }
}

/** A reference as one key part: every field, as client-go compares ObjectReferences. */
function referenceKey(r: EventObjectReference): string {
  return [r.apiVersion, r.kind, r.namespace ?? '', r.name, r.uid ?? '', r.resourceVersion ?? ''].join('/');
}

/** Cuts a note to the API's 1 kB limit (in UTF-8 bytes), ending in `...`. */
function truncate(note: string): string {
  if (Buffer.byteLength(note, 'utf8') <= NOTE_LIMIT) return note;
  let cut = note.slice(0, NOTE_LIMIT - 3);
  while (Buffer.byteLength(cut, 'utf8') > NOTE_LIMIT - 3) cut = cut.slice(0, -1);
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1); // never half a surrogate pair
  return `${cut}...`;
}
