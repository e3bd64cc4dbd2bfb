/**
 * @module workqueue/queue
 * A deduplicating, delaying, rate-limited FIFO of keys ("namespace/name") feeding a controller's workers, in the
 * dirty/processing design of client-go's workqueue. A key is *waiting* (in the FIFO), *processing* (handed out by
 * `get()`, until `done()`), *delayed* (scheduled by `addAfter()`), or several of these at once.
 * Guarantees:
 * - A waiting key is queued once, however often it is added (dedup).
 * - A key is never handed to two workers at once. Adding a key while it is processing marks it dirty; `done()` then
 *   queues it once, so it is processed again exactly once.
 * - Priorities (as controller-runtime's priority queue): a key waits at the highest priority any add gave it since it
 *   was last handed out, and `get()` hands out the highest priority first (default 0; controllers add the objects of
 *   an initial list at `LOW_PRIORITY`, so a fresh change is not stuck behind thousands of them). A key moved up goes to
 *   the end of its new priority. Within a priority, distinct keys come out in the order they were (first) queued;
 *   waiting `get()` calls are served in call order, each with a different key. `getWithPriority()` also says the
 *   priority the key was handed out at, so a caller can re-add it (a retry, a requeue) at that priority. Priorities
 *   are safe integers (else `UsageError` `InvalidArgument`).
 * - `addAfter()` keeps the earliest ready time and the highest priority per scheduled key. It does not look at the
 *   waiting set: a key that is waiting now is still scheduled, and when its time comes it is added like any `add()` (a
 *   no-op if it is still waiting, except that it may move up; processed again if it was processed in between), as
 *   client-go does. Keys falling due together are queued in schedule order (the schedule is workqueue/schedule.ts).
 * - After `shutDown()`/`shutDownWithDrain()`, adds are ignored, waiting and delayed keys are dropped, timers are
 *   cancelled, and every pending and future `get()` resolves `undefined`.
 * Caveats: metric hooks run synchronously inside queue calls and must not throw or call back into the queue. A
 * worker that never calls `done()` keeps its key processing forever (and blocks `shutDownWithDrain()`). With the real
 * clock, delayed adds use unref()'d timers, so they alone do not keep the process alive.
 */
import { UsageError } from '../errors.ts';
import { hop } from '../internal/hops.ts';
import { type Clock, realClock } from './clock.ts';
import { defaultControllerRateLimiter, type RateLimiter } from './ratelimiter.ts';
import { DelaySchedule } from './schedule.ts';

/** Optional hooks, called synchronously; the controller wires Prometheus metrics to them. */
export interface WorkQueueMetrics {
  /** The number of waiting keys (`len()`), after every change of it. */
  depth?(n: number): void;
  /** Every `add()` that made a key dirty (deduplicated adds are not counted, as client-go's adds_total); delayed adds count when they fall due. */
  added?(): void;
  /** Seconds from the add that made a key waiting (or dirty) to the `get()` that handed it out. */
  queueLatency?(seconds: number): void;
  /** Seconds from `get()` to `done()`. */
  workDuration?(seconds: number): void;
  /** Every `addRateLimited()` not ignored by shutdown. */
  retried?(): void;
}

/** Options of a `WorkQueue`; only `name` is required. */
export interface WorkQueueOptions<K> {
  /** Names the queue in metrics and logs. */
  name: string;
  /** Defaults to the real clock. */
  clock?: Clock;
  /** Defaults to `defaultControllerRateLimiter(clock)`. */
  rateLimiter?: RateLimiter<K>;
  /** Hooks called synchronously as the queue changes (the controller wires Prometheus to them). */
  metrics?: WorkQueueMetrics;
}

/** Consumed slots at the head of a priority's FIFO array before it is compacted. */
const COMPACT_AFTER = 1024;

/** The priority controllers give to adds from an informer's initial list and from resyncs (controller-runtime's). */
export const LOW_PRIORITY = -100;

/** A key handed out by `getWithPriority()`, with the priority it waited at. */
export interface Handed<K> {
  /** The key. */
  readonly item: K;
  /** The priority it waited at (re-add it at this one for a retry or requeue). */
  readonly priority: number;
}

function checkPriority(priority: number): void {
  if (!Number.isSafeInteger(priority)) {
    throw new UsageError('InvalidArgument', `a queue priority must be a safe integer, got ${priority}`);
  }
}

/** The waiting keys of one priority, in FIFO order from `head` on (entries whose key moved up are skipped). */
interface Bucket<K> {
  items: K[];
  head: number;
}

/**
 * A deduplicating, delaying, rate-limited queue of keys with client-go's dirty/processing rule (a key is never handed
 * to two workers at once, and an add while it is processing is not lost) and priorities. See the module comment for its
 * guarantees.
 *
 * @showModuleComment
 */
export class WorkQueue<K extends string = string> {
  /** Names the queue in metrics and logs. */
  readonly name: string;
  readonly #clock: Clock;
  readonly #rateLimiter: RateLimiter<K>;
  readonly #metrics: WorkQueueMetrics;

  /** Waiting keys by priority; each is dirty and not processing. */
  readonly #buckets = new Map<number, Bucket<K>>();
  /** The priorities that have a bucket, highest first. */
  #priorities: number[] = [];
  /** The priority each waiting key waits at (its live bucket entry). */
  readonly #waiting = new Map<K, number>();
  /** The highest priority asked for each dirty key since it was last handed out. */
  readonly #priority = new Map<K, number>();
  /** Keys that need processing: the waiting ones and the ones re-added while processing. */
  readonly #dirty = new Set<K>();
  /** Keys handed out by `get()` and not yet `done()`, with the time they were handed out. */
  readonly #processing = new Map<K, number>();
  /** When each dirty key was added, for the queue latency. */
  readonly #addedAt = new Map<K, number>();
  /** How long each processing key waited in the queue before `get()` handed it out (ms). */
  readonly #waited = new Map<K, number>();
  /** Pending `get()` calls, oldest first; only non-empty while no key is waiting. */
  #getters: ((handed: Handed<K> | undefined) => void)[] = [];

  /** The delayed adds (`addAfter`), each added when it falls due. */
  readonly #delays: DelaySchedule<K>;

  #shuttingDown = false;
  #drainers: (() => void)[] = [];

  constructor(options: WorkQueueOptions<K>) {
    this.name = options.name;
    this.#clock = options.clock ?? realClock;
    this.#rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter<K>(this.#clock);
    this.#metrics = options.metrics ?? {};
    this.#delays = new DelaySchedule<K>(this.#clock, (item, priority) => this.add(item, priority));
  }

  /** Marks the key as needing processing, at `priority` (default 0; higher first). Ignored after shutdown. */
  add(item: K, priority = 0): void {
    checkPriority(priority);
    if (this.#shuttingDown) return;
    if (!this.#dirty.has(item)) {
      this.#dirty.add(item);
      this.#priority.set(item, priority);
      this.#addedAt.set(item, this.#clock.now());
      hop('add', () => ({ queue: this.name, key: item }));
      if (!this.#processing.has(item)) this.#enqueue(item);
      this.#metrics.added?.();
      return;
    }
    if (priority <= (this.#priority.get(item) ?? priority)) return;
    this.#priority.set(item, priority);
    if (this.#waiting.has(item)) this.#push(item, priority); // moves up; its old entry is skipped
  }

  /**
   * Adds the key at `priority` once `delayMs` have passed (at once if `delayMs` <= 0). If the key is already
   * scheduled, the earlier of the two times and the higher of the two priorities are kept. The schedule is independent
   * of whether the key is waiting or processing now.
   */
  addAfter(item: K, delayMs: number, priority = 0): void {
    checkPriority(priority);
    if (this.#shuttingDown) return;
    if (!(delayMs > 0)) {
      this.add(item, priority);
      return;
    }
    this.#delays.schedule(item, delayMs, priority);
  }

  /**
   * Adds the key at `priority` after the rate limiter's delay for it (which counts a retry). Ignored after shutdown.
   */
  addRateLimited(item: K, priority = 0): void {
    checkPriority(priority);
    if (this.#shuttingDown) return;
    const delay = this.#rateLimiter.when(item);
    this.#metrics.retried?.();
    this.addAfter(item, delay, priority);
  }

  /** Resets the key's rate-limiter backoff; call it when the key was processed successfully. */
  forget(item: K): void {
    this.#rateLimiter.forget(item);
  }

  /** How many times the key was rate-limited since it was last forgotten. */
  numRequeues(item: K): number {
    return this.#rateLimiter.retries(item);
  }

  /** How long a key now processing waited in the queue before `get()` handed it out, in ms (`undefined` if not processing). */
  waitedMs(item: K): number | undefined {
    return this.#waited.get(item);
  }

  /**
   * The next waiting key, marked processing until `done()` is called for it; waits while none is waiting. Resolves
   * `undefined` once the queue is shut down (then the caller should stop).
   */
  get(): Promise<K | undefined> {
    if (this.#shuttingDown) return Promise.resolve(undefined);
    const handed = this.#shift();
    if (handed === undefined) return new Promise((resolve) => this.#getters.push((h) => resolve(h?.item)));
    this.#metrics.depth?.(this.len());
    return Promise.resolve(this.#start(handed.item, handed.priority).item);
  }

  /** Like `get()`, with the priority the key waited at (retries and requeues should be added at it). */
  getWithPriority(): Promise<Handed<K> | undefined> {
    if (this.#shuttingDown) return Promise.resolve(undefined);
    const handed = this.#shift();
    if (handed === undefined) return new Promise((resolve) => this.#getters.push(resolve));
    this.#metrics.depth?.(this.len());
    return Promise.resolve(this.#start(handed.item, handed.priority));
  }

  /** Ends the processing of a key from `get()`; if it was added meanwhile, it is queued again (once). */
  done(item: K): void {
    const startedAt = this.#processing.get(item);
    if (startedAt === undefined) return;
    this.#processing.delete(item);
    this.#waited.delete(item);
    hop('done', () => ({ queue: this.name, key: item }));
    if (this.#dirty.has(item)) this.#enqueue(item);
    this.#metrics.workDuration?.((this.#clock.now() - startedAt) / 1000);
    if (this.#processing.size === 0) this.#releaseDrainers();
  }

  /** The number of waiting keys (not processing, not delayed). */
  len(): number {
    return this.#waiting.size;
  }

  /** Stops at once: waiting and delayed keys are dropped, pending and future `get()` resolve `undefined`. */
  shutDown(): void {
    this.#stop();
    // Like client-go, a forced shutdown also ends a drain in progress.
    this.#releaseDrainers();
  }

  /**
   * Stops like `shutDown()`, and resolves once every key being processed is `done()`. Calling `shutDown()` meanwhile
   * resolves it at once.
   */
  shutDownWithDrain(): Promise<void> {
    this.#stop();
    if (this.#processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drainers.push(resolve));
  }

  /** Whether `shutDown` or `shutDownWithDrain` was called. */
  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** The sum of how long each key being processed has been processing, in seconds. */
  unfinishedWorkSeconds(): number {
    const now = this.#clock.now();
    let total = 0;
    for (const startedAt of this.#processing.values()) total += now - startedAt;
    return total / 1000;
  }

  /** How long the longest-processing key has been processing, in seconds (0 when none is). */
  longestRunningProcessorSeconds(): number {
    const now = this.#clock.now();
    let longest = 0;
    for (const startedAt of this.#processing.values()) longest = Math.max(longest, now - startedAt);
    return longest / 1000;
  }

  /** Makes a dirty, not processing key available: to the oldest pending `get()`, or at the end of the FIFO. */
  #enqueue(item: K): void {
    const priority = this.#priority.get(item) ?? 0;
    const getter = this.#getters.shift();
    if (getter !== undefined) {
      getter(this.#start(item, priority));
      return;
    }
    this.#push(item, priority);
    this.#metrics.depth?.(this.len());
  }

  /** Puts a waiting key at the end of its priority's FIFO. */
  #push(item: K, priority: number): void {
    let bucket = this.#buckets.get(priority);
    if (!bucket) {
      bucket = { items: [], head: 0 };
      this.#buckets.set(priority, bucket);
      this.#priorities = [...this.#buckets.keys()].sort((a, b) => b - a);
    }
    bucket.items.push(item);
    this.#waiting.set(item, priority);
  }

  /** Moves a key from dirty to processing. */
  #start(item: K, priority: number): Handed<K> {
    hop('get', () => ({ queue: this.name, key: item }));
    const now = this.#clock.now();
    this.#dirty.delete(item);
    this.#priority.delete(item);
    this.#processing.set(item, now);
    const addedAt = this.#addedAt.get(item);
    this.#addedAt.delete(item);
    if (addedAt !== undefined) {
      this.#waited.set(item, now - addedAt);
      this.#metrics.queueLatency?.((now - addedAt) / 1000);
    }
    return { item, priority };
  }

  /** Takes the next waiting key: the oldest of the highest priority. */
  #shift(): Handed<K> | undefined {
    for (const priority of this.#priorities) {
      const bucket = this.#buckets.get(priority) as Bucket<K>;
      while (bucket.head < bucket.items.length) {
        const item = bucket.items[bucket.head++] as K;
        if (this.#waiting.get(item) !== priority) continue; // it moved up to a higher priority
        this.#waiting.delete(item);
        this.#compact(priority, bucket);
        return { item, priority };
      }
      this.#compact(priority, bucket);
    }
    return undefined;
  }

  #compact(priority: number, bucket: Bucket<K>): void {
    if (bucket.head === bucket.items.length) {
      this.#buckets.delete(priority);
      this.#priorities = this.#priorities.filter((p) => p !== priority);
    } else if (bucket.head >= COMPACT_AFTER && bucket.head * 2 >= bucket.items.length) {
      bucket.items = bucket.items.slice(bucket.head);
      bucket.head = 0;
    }
  }

  #stop(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    const hadWaiting = this.len() > 0;
    this.#buckets.clear();
    this.#priorities = [];
    this.#waiting.clear();
    this.#priority.clear();
    this.#dirty.clear();
    this.#addedAt.clear();
    this.#waited.clear();
    this.#delays.clear();
    const getters = this.#getters;
    this.#getters = [];
    for (const getter of getters) getter(undefined);
    if (hadWaiting) this.#metrics.depth?.(0);
  }

  #releaseDrainers(): void {
    const drainers = this.#drainers;
    this.#drainers = [];
    for (const drainer of drainers) drainer();
  }
}
