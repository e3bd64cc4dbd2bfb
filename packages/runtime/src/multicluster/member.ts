/**
 * @module multicluster/member
 * One engaged member cluster of a fleet: its own client, cache, metrics and controllers (made by the fleet's `setup`
 * for it), run until the fleet disengages it.
 *
 * An engagement is one attempt: a client from the provider's config; `setup(member)` builds its controllers; every
 * kind they watch must be served (else `ResourceNotServed`); its caches must sync within `syncTimeoutMs`; then it is
 * `ready`. Every `probeIntervalMs` a `GET /version` (timeout `probeTimeoutMs`) tells whether it is still reachable:
 * `unreachable` until one answers again (its controllers keep running, and their informers and retries catch up
 * then). An attempt that fails (unreachable, a kind not served, a controller that fails) is torn down and tried again
 * after a backoff (1 s doubling to `maxBackoffMs`, reset by an attempt that got ready).
 *
 * Guarantees: a member's controllers, queues and caches are its own, so a member that is slow, unreachable or failing
 * never holds a reconcile of another, nor the hub's. `stop()` resolves only once nothing of the member runs: its
 * controllers drained (in-flight reconciles get the drain time, then their `ctx.signal` aborts), its informers stopped,
 * its client closed and its metrics detached; nothing the fleet keeps refers to its cache any more.
 */
import { Cache } from '../cache/cache.ts';
import type { CacheOptions } from '../cache/options.ts';
import { Client } from '../client/client.ts';
import type { Kind, KubeObject } from '../client/resource.ts';
import { type BuilderOptions, ControllerBuilder, type ControllerBuilderFor } from '../controller/builder.ts';
import type { Controller } from '../controller/controller.ts';
import type { Predicate } from '../controller/predicates.ts';
import type { EventRecorder } from '../helpers/events.ts';
import { Backoff } from '../internal/backoff.ts';
import { sleep, within } from '../internal/sleep.ts';
import type { Logger } from '../logger.ts';
import { Metrics } from '../metrics.ts';
import type { Registry } from '../prometheus.ts';
import { FleetError } from './errors.ts';
import type { ClusterEntry } from './provider.ts';

/** Where a member is: `engaging` (an attempt under way), `ready`, `unreachable` (engaged, its probe fails), `failing`
 * (its last attempt failed; the next waits its backoff). */
export type MemberState = 'engaging' | 'ready' | 'unreachable' | 'failing';

/** What a fleet's `setup` gets for each member cluster: its client, cache and controllers, and the hub's. */
export interface FleetMember {
  /** The cluster's name (the provider's). */
  readonly name: string;
  /** The member's client. */
  readonly client: Client;
  /** The member's cache (its controllers' informers). */
  readonly cache: Cache;
  /** Bound with `cluster: name`. */
  readonly log: Logger;
  /** Aborts when this engagement ends (the member is disengaged, or the engagement failed). */
  readonly signal: AbortSignal;
  /**
   * The manager's own cluster: its client and (started) cache, e.g. to watch what is copied into members. With
   * sharding, the cache is the fleet's own, which holds the hub's objects whole (the manager's holds its shards only).
   */
  readonly hub: { readonly client: Client; readonly cache: Cache };
  /**
   * A controller builder for this member (call it in `setup`; `cache`'s informers start once `setup` has returned, so
   * `setup` must not read it): its watches, reads and writes are the member's (`watchesIn(member.hub.cache,
   * …)` watches the hub), `ctx.cluster` is its name, its metrics carry `cluster="<name>"`.
   */
  controller<T extends KubeObject>(
    kind: Kind<T, unknown>,
    ...predicates: NoInfer<Predicate<T>>[]
  ): ControllerBuilderFor<T>;
}

/** What a member is run with (the fleet's). */
export interface MemberOptions {
  readonly name: string;
  readonly entry: ClusterEntry;
  readonly setup: (member: FleetMember) => void | Promise<void>;
  readonly hub: FleetMember['hub'];
  readonly log: Logger;
  /** Attaches the member's metrics to the manager's, with `cluster="<name>"`; returns the detach. */
  readonly attach: (registry: Registry) => () => void;
  /** The client's user-agent name and write options, as the manager's. */
  readonly client: Pick<
    ConstructorParameters<typeof Client>[1] & object,
    'name' | 'fieldValidation' | 'protobuf' | 'onWarning'
  >;
  readonly cache: Omit<CacheOptions, 'client' | 'log' | 'metrics'>;
  /** The controllers' defaults, for a member client (its fenced Event recorder among them). */
  readonly defaults: (client: Client) => BuilderOptions;
  readonly syncTimeoutMs: number;
  /** How long in-flight reconciles get when it stops (the manager's `gracefulShutdownTimeoutMs`). */
  readonly drainMs: number;
  readonly probeIntervalMs: number;
  readonly probeTimeoutMs: number;
  readonly maxBackoffMs: number;
  /** Resolves when the member's predecessor of the same name has stopped: it engages only then. */
  readonly start?: Promise<void>;
  /** Checks that the member serves each kind its controllers watch (the manager's `checkServed`). */
  readonly served: (
    client: Client,
    kinds: Iterable<Kind>,
    options: { readonly timeoutMs: number; readonly log: Logger; readonly signal: AbortSignal },
  ) => Promise<void>;
  /** Told each change of state. */
  readonly onState: (state: MemberState, error?: Error) => void;
}

/** What one attempt made, for its teardown. */
interface Parts {
  metrics?: Metrics;
  detach?: () => void;
  client?: Client;
  cache?: Cache;
  events?: EventRecorder | undefined;
  readonly controllers: Controller[];
  readonly runs: Promise<void>[];
  failure?: Error;
}

/** One member cluster, engaged until `stop()` (see the module comment). */
export class Member {
  readonly #o: MemberOptions;
  readonly #stop = new AbortController();
  readonly #done: Promise<void>;
  #state: MemberState = 'engaging';
  /** The current attempt got ready. */
  #readyOnce = false;
  #error: Error | undefined;
  #client: Client | undefined;

  constructor(options: MemberOptions) {
    this.#o = options;
    this.#done = this.#loop();
  }

  /** Its state now. */
  get state(): MemberState {
    return this.#state;
  }

  /** Why its last attempt failed, or why it is unreachable. */
  get error(): Error | undefined {
    return this.#error;
  }

  /** Its client while an engagement runs. */
  get client(): Client | undefined {
    return this.#client;
  }

  /** The config it was engaged with. */
  get fingerprint(): string {
    return this.#o.entry.fingerprint;
  }

  /** Disengages it; resolves once nothing of it runs. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#done;
  }

  #set(state: MemberState, error?: Error): void {
    this.#state = state;
    this.#error = error;
    this.#o.onState(state, error);
  }

  async #loop(): Promise<void> {
    await this.#o.start;
    const backoff = new Backoff({ initialMs: 1_000, maxMs: this.#o.maxBackoffMs, jitter: 0 });
    while (!this.#stop.signal.aborted) {
      this.#set('engaging');
      try {
        await this.#attempt();
      } catch (err) {
        if (this.#stop.signal.aborted) break;
        if (this.#readyOnce) backoff.reset();
        const error = err instanceof Error ? err : new FleetError('EngagementFailed', String(err));
        this.#set('failing', error);
        const delay = backoff.next();
        this.#o.log.warn({ err: error.message, retryInMs: delay }, 'cluster not engaged');
        await sleep(delay, this.#stop.signal);
      }
    }
  }

  /** One engagement: resolves when the fleet stops it, rejects when it fails (after its teardown either way). */
  async #attempt(): Promise<void> {
    const o = this.#o;
    this.#readyOnce = false;
    const attempt = new AbortController();
    const stopped = () => attempt.abort();
    this.#stop.signal.addEventListener('abort', stopped, { once: true });
    const parts: Parts = { controllers: [], runs: [] };
    try {
      parts.metrics = new Metrics({ processMetrics: false });
      parts.detach = o.attach(parts.metrics.registry);
      parts.client = new Client(o.entry.config, { ...o.client, metrics: parts.metrics.requests() });
      parts.cache = new Cache({ ...o.cache, client: parts.client, log: o.log, metrics: parts.metrics });
      this.#client = parts.client;
      await this.#run(parts, attempt);
    } finally {
      this.#stop.signal.removeEventListener('abort', stopped);
      attempt.abort();
      await this.#teardown(parts);
    }
  }

  /** Sets the member up, starts it, and runs it until the attempt aborts; rejects with why it failed. */
  async #run(parts: Parts, attempt: AbortController): Promise<void> {
    const o = this.#o;
    const { client, cache, metrics } = parts as Required<Parts>;
    const signal = attempt.signal;
    const setup = Promise.resolve(o.setup(this.#member(parts, metrics, signal)));
    if (!(await within(setup, o.syncTimeoutMs)))
      throw new FleetError('EngagementFailed', `setup did not return within ${o.syncTimeoutMs / 1000} s`);
    await setup;
    const kinds = parts.controllers.flatMap((c) => c.resources());
    // bounded by the sync timeout too: a member that holds requests open must not hold the engagement for longer
    const served = AbortSignal.any([signal, AbortSignal.timeout(o.syncTimeoutMs)]);
    await o.served(client, kinds, { timeoutMs: o.syncTimeoutMs, log: o.log, signal: served });
    cache.start(signal);
    for (const c of parts.controllers)
      parts.runs.push(
        c.start(signal).catch((err: unknown) => {
          const message = `controller ${c.name}: ${(err as Error).message}`;
          parts.failure ??= new FleetError('ControllerFailed', message, { cause: err });
          attempt.abort();
        }),
      );
    const synced = await cache.waitForSync(AbortSignal.any([signal, AbortSignal.timeout(o.syncTimeoutMs)]));
    if (parts.failure) throw parts.failure;
    if (signal.aborted) return;
    if (!synced) {
      const pending = cache.unsynced().map((i) => i.resource.plural);
      throw new FleetError(
        'ClusterUnreachable',
        `caches did not sync within ${o.syncTimeoutMs / 1000} s: ${pending.join(', ')}`,
      );
    }
    this.#readyOnce = true;
    this.#set('ready');
    await this.#probe(client, signal);
    if (parts.failure) throw parts.failure;
  }

  /**
   * Stops what the attempt started: its controllers drain (a reconcile that ignores its signal is left behind after
   * the drain and a second, and logged), their handlers leave every informer (the hub's too), Events held back are
   * written, the informers stop, the client closes and the metrics are detached.
   */
  async #teardown(parts: Parts): Promise<void> {
    const o = this.#o;
    const drainMs = o.drainMs + 1_000;
    if (!(await within(Promise.all(parts.runs), drainMs)))
      o.log.warn({ afterMs: drainMs }, 'a reconcile of the member did not stop: left behind');
    for (const c of parts.controllers) c.dispose();
    await parts.events?.flush(o.drainMs);
    if (parts.cache) await within(Promise.all(parts.cache.informers().map((i) => i.stopped())), drainMs);
    this.#client = undefined;
    parts.client?.close();
    parts.detach?.();
  }

  /** Probes the member until `signal` aborts, `unreachable` while it does not answer. */
  async #probe(client: Client, signal: AbortSignal): Promise<void> {
    const o = this.#o;
    while (!signal.aborted) {
      await sleep(o.probeIntervalMs, signal);
      if (signal.aborted) return;
      try {
        const timeout = AbortSignal.any([signal, AbortSignal.timeout(o.probeTimeoutMs)]);
        await client.transport.request({ method: 'GET', path: '/version', signal: timeout });
        if (this.#state !== 'ready') {
          o.log.info({}, 'cluster reachable again');
          this.#set('ready');
        }
      } catch (err) {
        if (signal.aborted) return;
        if (this.#state === 'ready') o.log.warn({ err: (err as Error).message }, 'cluster unreachable');
        this.#set('unreachable', new FleetError('ClusterUnreachable', (err as Error).message, { cause: err }));
      }
    }
  }

  #member(parts: Parts, metrics: Metrics, signal: AbortSignal): FleetMember {
    const o = this.#o;
    const { client, cache } = parts as Required<Parts>;
    const defaults = o.defaults(client);
    parts.events = defaults.events;
    const builder = new ControllerBuilder({
      ...{ client, cache, log: o.log, metrics },
      defaults: { ...defaults, cluster: o.name },
      register: (c) => parts.controllers.push(c),
    });
    return {
      ...{ name: o.name, client, cache, log: o.log, hub: o.hub, signal },
      controller: (kind, ...predicates) => builder.for(kind, ...predicates),
    };
  }
}
