/**
 * @module controller/mapping
 * Runs the mapper of one watch (`for`, `owns`, `watches`): turns each change of the watched kind into the requests to
 * enqueue, whether the mapper answers at once or with a promise.
 *
 * Guarantees:
 * - A mapper that answers synchronously enqueues within the event, as before mappers could be async.
 * - An async mapper runs on its watch's own lane: at most `concurrency` calls in flight (default 8), and calls for
 *   one object (namespace/name) one at a time, in the order of its events. The changes of an object that arrive while
 *   its mapping runs, or while the lane is full, wait as ONE entry per object holding each distinct state seen (by uid
 *   and resourceVersion): the next call maps them all, so no state a request depended on is skipped and a burst of
 *   updates costs one mapping, not one each. Objects wait in the order they first arrived.
 * - Each call's `ctx.signal` aborts after `timeoutMs` (default 30 s) or when the controller stops; a call not settled
 *   by then is given up — logged and counted as an error, its late answer dropped, its slot freed. So a slow or hung
 *   mapper delays its own kind's mappings by at most `timeoutMs`, and never another watch's: each watch has its lane,
 *   and the informers' event handlers never wait for a mapper.
 * - A throw or rejection is logged at error level (with the kind and the object's key) and counted in
 *   `opkit_controller_mapper_errors_total{controller,kind}`; the other objects of the event, and the watch, go on.
 * - Requests are enqueued at the highest priority of the events they were mapped from (an initial-list add is
 *   `LOW_PRIORITY`).
 * Caveats: ordering holds per object only; two objects' mappings may finish in any order (the work queue does not care:
 * a request is reconciled from the current state, whatever enqueued it). The timeout counts a cache read's wait for
 * its informer to sync, so at start-up a kind that takes longer than `timeoutMs` to list fails the first mappings
 * (counted); the primary kind's own initial list enqueues every primary object anyway.
 */
import { type KubeObject, keyOf } from '../client/resource.ts';
import { messageOf, UsageError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import type { Counter, Registry } from '../prometheus.ts';
import type { Clock } from '../workqueue/index.ts';
import type { CacheReader, MapContext, MapFunc } from './handlers.ts';
import type { ReconcileRequest } from './reconcile.ts';

/** How many calls of one watch's async mapper may run at once, unless the controller says otherwise. */
export const DEFAULT_MAPPER_CONCURRENCY = 8;
/** How long one call of an async mapper may take before it is given up, unless the controller says otherwise. */
export const DEFAULT_MAPPER_TIMEOUT_MS = 30_000;

/** What a `MapRunner` needs: the mapper, where requests go, and the controller's cache, logger, metrics and clock. */
export interface MapRunnerOptions<T extends KubeObject> {
  /** The controller's name (a metric label). */
  readonly controller: string;
  /** The watched kind's name (a metric label and a log field), e.g. `ConfigMap`. */
  readonly kind: string;
  /** The watch's mapper. */
  readonly map: MapFunc<T>;
  /** Receives each mapped request, with the priority of the events it came from. */
  readonly enqueue: (request: ReconcileRequest, priority: number) => void;
  /** Handed to the mapper as `ctx.cache`. */
  readonly cache: CacheReader;
  /** The controller's logger. */
  readonly log: Logger;
  /** Where mapper errors are counted, when set. */
  readonly metrics?: Metrics | undefined;
  /** The clock of the timeouts. */
  readonly clock: Clock;
  /** Calls in flight at most (default `DEFAULT_MAPPER_CONCURRENCY`). */
  readonly concurrency?: number | undefined;
  /** Longest call (default `DEFAULT_MAPPER_TIMEOUT_MS`). */
  readonly timeoutMs?: number | undefined;
}

/** The states of one object waiting for its mapping, and the highest priority they were enqueued at. */
interface Waiting<T> {
  readonly states: Map<string, T>;
  priority: number;
}

const counters = new WeakMap<Registry, Counter<'controller' | 'kind'>>();

/** `opkit_controller_mapper_errors_total` of a registry (created on first use, once per registry). */
function mapperErrors(registry: Registry): Counter<'controller' | 'kind'> {
  let c = counters.get(registry);
  if (!c) {
    c = registry.counter({
      name: 'opkit_controller_mapper_errors_total',
      help: 'Calls of a watch mapper that threw, rejected or timed out, by controller and watched kind',
      labelNames: ['controller', 'kind'],
    });
    counters.set(registry, c);
  }
  return c;
}

function isThenable<V>(v: V | PromiseLike<V>): v is PromiseLike<V> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}

/** One watch's mapper lane; see the module comment. */
export class MapRunner<T extends KubeObject> {
  readonly #o: MapRunnerOptions<T>;
  readonly #limit: number;
  readonly #timeoutMs: number;
  readonly #running = new Set<string>();
  readonly #waiting = new Map<string, Waiting<T>>();
  /** The calls holding a slot, each with the controller of its `ctx.signal`. */
  readonly #calls = new Set<AbortController>();
  #stopped = false;
  readonly #errors: Counter<'controller' | 'kind'> | undefined;

  constructor(options: MapRunnerOptions<T>) {
    this.#o = options;
    this.#limit = options.concurrency ?? DEFAULT_MAPPER_CONCURRENCY;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_MAPPER_TIMEOUT_MS;
    if (!Number.isInteger(this.#limit) || this.#limit < 1)
      throw new UsageError('InvalidArgument', `mapperConcurrency: ${this.#limit} is not an integer ≥ 1`);
    if (!Number.isFinite(this.#timeoutMs) || this.#timeoutMs <= 0)
      throw new UsageError('InvalidArgument', `mapperTimeoutMs: ${this.#timeoutMs} is not a number of ms > 0`);
    this.#errors = options.metrics ? mapperErrors(options.metrics.registry) : undefined;
    this.#errors?.inc({ controller: options.controller, kind: options.kind }, 0);
  }

  /** Calls of the async mapper running now. */
  get inFlight(): number {
    return this.#running.size;
  }

  /** Objects waiting for a call. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /** Maps the states of ONE object from one event (an update gives the old and the new), at `priority`. */
  submit(objs: readonly T[], priority: number): void {
    const first = objs[0];
    if (first === undefined || this.#stopped) return;
    const key = keyOf(first);
    const waiting = this.#waiting.get(key);
    if (waiting === undefined && !this.#running.has(key) && this.#running.size < this.#limit) {
      this.#run(key, objs, priority);
      return;
    }
    const w = waiting ?? { states: new Map<string, T>(), priority };
    w.priority = Math.max(w.priority, priority);
    for (const o of objs) w.states.set(`${o.metadata.uid ?? ''}/${o.metadata.resourceVersion ?? ''}`, o);
    if (waiting === undefined) this.#waiting.set(key, w);
  }

  /** Gives up every call and drops what waits (the controller stopped). */
  stop(): void {
    this.#stopped = true;
    this.#waiting.clear();
    for (const call of this.#calls) call.abort(new DOMException('the controller stopped', 'AbortError'));
  }

  #run(key: string, objs: readonly T[], priority: number): void {
    const run = new Run();
    let pending: Promise<void>[] | undefined;
    for (const obj of objs) {
      const ctx = new Context(this.#o, obj, run);
      try {
        const out = this.#o.map(obj, ctx);
        if (!isThenable(out)) {
          for (const r of out) this.#o.enqueue(r, priority);
          continue;
        }
        const answered = (requests: readonly ReconcileRequest[]) => {
          if (!run.live) return;
          try {
            for (const r of requests) this.#o.enqueue(r, priority);
          } catch (err) {
            this.#failed(ctx.log, err); // not a list, or a request the queue refused
          }
        };
        const failed = (err: unknown) => {
          if (run.live) this.#failed(ctx.log, err);
        };
        pending ??= [];
        pending.push(Promise.resolve(out).then(answered, failed));
      } catch (err) {
        this.#failed(ctx.log, err);
      }
    }
    if (pending) this.#wait(key, run, pending);
  }

  /** Holds `key`'s slot until its calls settle or are given up (timeout, stop), then lets the next object run. */
  #wait(key: string, run: Run, pending: readonly Promise<void>[]): void {
    const call = run.controller;
    this.#running.add(key);
    this.#calls.add(call);
    const timer = this.#o.clock.setTimer(this.#timeoutMs, () => {
      call.abort(new DOMException(`the mapper took longer than ${this.#timeoutMs} ms`, 'TimeoutError'));
    });
    const given = new Promise<boolean>((resolve) =>
      call.signal.addEventListener('abort', () => resolve(true), { once: true }),
    );
    const settled = (gaveUp: boolean) => {
      run.live = false;
      timer.cancel();
      this.#calls.delete(call);
      this.#running.delete(key);
      if (this.#stopped) return;
      if (gaveUp) this.#failed(this.#o.log.child({ kind: this.#o.kind, key }), call.signal.reason);
      this.#next();
    };
    // the slot is freed however the race ends (a rejection here would otherwise wedge the object's lane)
    void Promise.race([Promise.all(pending).then(() => false), given]).then(settled, () => settled(false));
  }

  /** Starts the waiting objects' calls, oldest first, while the lane has room. */
  #next(): void {
    for (const [key, w] of this.#waiting) {
      if (this.#running.size >= this.#limit) return;
      if (this.#running.has(key)) continue;
      this.#waiting.delete(key);
      this.#run(key, [...w.states.values()], w.priority);
    }
  }

  #failed(log: Logger, err: unknown): void {
    this.#errors?.inc({ controller: this.#o.controller, kind: this.#o.kind });
    log.error({ err: messageOf(err) }, 'the watch mapper failed: its requests are not enqueued');
  }
}

/** One run of a mapper for one object's states: the controller of their `ctx.signal` (made on first use). */
class Run {
  /** False once the run ended or was given up: a late answer is dropped. */
  live = true;
  #abort: AbortController | undefined;

  get controller(): AbortController {
    this.#abort ??= new AbortController();
    return this.#abort;
  }
}

/** A mapper's `ctx`: the logger and the signal are made only when asked for (most mappers answer at once). */
class Context implements MapContext {
  readonly cache: CacheReader;
  readonly #o: { readonly log: Logger; readonly kind: string };
  readonly #obj: KubeObject;
  readonly #run: Run;
  #log: Logger | undefined;

  constructor(
    o: { readonly log: Logger; readonly kind: string; readonly cache: CacheReader },
    obj: KubeObject,
    run: Run,
  ) {
    this.cache = o.cache;
    this.#o = o;
    this.#obj = obj;
    this.#run = run;
  }

  get log(): Logger {
    const { namespace, name } = this.#obj.metadata;
    this.#log ??= this.#o.log.child({ kind: this.#o.kind, ...(namespace ? { namespace } : {}), name: name ?? '' });
    return this.#log;
  }

  get signal(): AbortSignal {
    return this.#run.controller.signal;
  }
}
