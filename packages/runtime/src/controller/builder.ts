/**
 * @module controller/builder
 * The common case in one expression, as controller-runtime's builder:
 *
 * ```ts
 * import { done, type Manager } from '@opkit/runtime';
 * import { generationChanged, retryAfter } from '@opkit/runtime/controller';
 * import { ConfigMaps, Pods } from '@opkit/runtime/kinds';
 * import { AppServices } from './appservice.ts';
 *
 * export function setup(mgr: Manager): void {
 *   mgr
 *     .controller(AppServices, generationChanged) // each AppService (or .for(kind) on a bare builder)
 *     .owns(Pods) // … and the AppService controlling a changed Pod
 *     .watches(ConfigMaps, (cm) => [{ namespace: 'default', name: `${cm.metadata.name}-app` }]) // … and what a
 *     .withOptions({ maxConcurrentReconciles: 4 }) //   function maps a ConfigMap to (sync or async; or referencing())
 *     .onError(() => retryAfter(30_000)) // optional: instead of defaultErrorPolicy
 *     .reconcile(async () => done()); // object-first (controller/object.ts)
 * }
 * ```
 * `.complete(reconciler)` takes a request-based reconciler instead (the layer below). The pieces (`Controller.watch`,
 * handlers, predicates, `objectReconciler`) stay usable alone.
 *
 * Call order is carried by the types, as tRPC's builder carries its state in type parameters: a bare
 * `ControllerBuilder` has no `owns`, `onError`, `finalize`, `reconcile` or `complete` (name the primary kind with
 * `for` first, and only once: `ControllerBuilderFor` has no `for`); after `onError` or `finalize` the builder's second
 * type parameter is `'object'`, and `complete` (which would ignore them) does not type-check. Each call returns a new
 * builder and leaves the one it was called on as it was, so a partial chain can be reused.
 *
 * Guarantees: a controller is built (and registered with the manager) only by `reconcile` or `complete`. The one
 * run-time check left is where a type cannot reach: `complete` on a builder given `onError` or `finalize` by a caller
 * without the types (JavaScript, or a cast) throws a `UsageError` `InvalidArgument` instead of dropping them silently.
 * Every other misordering is a method the builder does not have: a type error, and for a caller without the types
 * the engine's own `TypeError` (`… is not a function`) at the call, never a controller built wrong.
 */
import type { Cache } from '../cache/cache.ts';
import type { Kind, KubeObject } from '../client/resource.ts';
import { UsageError } from '../errors.ts';
import { Controller, type ControllerOptions, type WatchRole } from './controller.ts';
import { type MapFunc, requestForObject, requestsForOwner } from './handlers.ts';
import { type Finalize, type ObjectContext, type ObjectReconcileFunc, objectReconciler } from './object.ts';
import { defaultErrorPolicy, type ErrorAction, type ErrorPolicy } from './policy.ts';
import type { Predicate } from './predicates.ts';
import type { ReconcileContext, ReconcileFunc, Reconciler } from './reconcile.ts';

/**
 * What a builder wires each controller to: the manager's client, cache, logger, metrics and clock, and what it does
 * with a finished controller.
 */
export type ControllerDeps = Pick<ControllerOptions, 'client' | 'cache' | 'log' | 'metrics' | 'clock'> & {
  /** Called with the finished controller (the manager uses it to run the controller). */
  readonly register?: (controller: Controller) => void;
  /** Defaults for every controller built with these deps (e.g. the manager's settings). */
  readonly defaults?: BuilderOptions;
  /** Defaults over `defaults` for a controller with `needLeaderElection: false` (e.g. an unfenced Event recorder). */
  readonly everyReplica?: BuilderOptions;
};
/**
 * A controller's own options (concurrency, rate limiter, error policy, …): `ControllerOptions` without what the builder
 * supplies.
 */
export type BuilderOptions = Omit<ControllerOptions, 'client' | 'cache' | 'log' | 'metrics' | 'clock' | 'name'>;

/** The error policy of one object-first controller: called with the object whose reconcile threw. */
export type ObjectErrorPolicy<T extends KubeObject> = (obj: T, err: unknown, ctx: ObjectContext<T>) => ErrorAction;

/**
 * How a `ControllerBuilderFor` may end: `'any'` (`reconcile` or `complete`), or `'object'` once `onError` or
 * `finalize` was called (only `reconcile`, the object-first reconciler they work with).
 */
export type BuilderEnding = 'any' | 'object';

/**
 * A controller's options: its own over the deps' `defaults`, and for one with `needLeaderElection: false` over
 * `everyReplica` over `defaults`.
 */
export function mergedOptions(
  deps: Pick<ControllerDeps, 'defaults' | 'everyReplica'>,
  own: BuilderOptions,
): BuilderOptions {
  const onEvery = (own.needLeaderElection ?? deps.defaults?.needLeaderElection) === false;
  return { ...deps.defaults, ...(onEvery ? deps.everyReplica : {}), ...own };
}

/** One watch of the controller to build: its kind, mapping and predicates, given the builder's event filters. */
type Watch = (c: Controller, filters: readonly Predicate<KubeObject>[]) => void;

/** What a builder has collected, whatever its primary kind (never changed: each call makes a new one). */
interface Wiring {
  readonly deps: ControllerDeps;
  readonly name: string | undefined;
  readonly watches: readonly Watch[];
  readonly filters: readonly Predicate<KubeObject>[];
  readonly options: BuilderOptions;
}

/** The primary kind and what applies to its objects. */
interface Primary<P extends KubeObject> {
  readonly kind: Kind<P, unknown>;
  readonly predicates: readonly Predicate<P>[];
  readonly onError?: ObjectErrorPolicy<P>;
  readonly finalize?: Finalize<P>;
}

const watch =
  <T extends KubeObject>(
    r: Kind<T, unknown>,
    map: MapFunc<T>,
    predicates: readonly Predicate<T>[],
    role: WatchRole = 'other',
    from?: Cache,
  ): Watch =>
  (c, filters) =>
    c.watch<T>(r, map, [...filters, ...predicates], role, from);

const withName = (w: Wiring, name: string): Wiring => ({ ...w, name });
const withWatch = (w: Wiring, add: Watch): Wiring => ({ ...w, watches: [...w.watches, add] });
const withFilter = (w: Wiring, p: Predicate<KubeObject>): Wiring => ({ ...w, filters: [...w.filters, p] });
const withOptions = (w: Wiring, options: BuilderOptions): Wiring => ({ ...w, options: { ...w.options, ...options } });

/**
 * A controller builder before its primary kind is named (`new ControllerBuilder(deps)`, or `mgr.controller()`):
 * name it with `for(kind)`, which returns the `ControllerBuilderFor` that owns, watches and reconciles.
 */
export class ControllerBuilder {
  #w: Wiring;

  /** A builder for controllers wired to `deps` (the manager makes one with its own: `mgr.controller()`). */
  constructor(deps: ControllerDeps) {
    this.#w = { deps, name: undefined, watches: [], filters: [], options: {} };
  }

  static #from(w: Wiring): ControllerBuilder {
    const b = new ControllerBuilder(w.deps);
    b.#w = w;
    return b;
  }

  /** The controller's name (default: the primary kind, lower-case): in logs and metrics; must be unique. */
  named(name: string): ControllerBuilder {
    return ControllerBuilder.#from(withName(this.#w, name));
  }

  /** The primary kind: each change enqueues the object itself. */
  for<T extends KubeObject>(r: Kind<T, unknown>, ...predicates: NoInfer<Predicate<T>>[]): ControllerBuilderFor<T> {
    return new ControllerBuilderFor(this.#w, { kind: r, predicates }, 'any');
  }

  /**
   * Any kind, mapped to requests by a function that may be async and reads the cache through its context (`MapFunc`);
   * `referencing(B, 'spec.aRef')` / `byIndex(index)` map a changed A to the Bs that reference it.
   */
  watches<T extends KubeObject>(
    r: Kind<T, unknown>,
    map: MapFunc<T>,
    ...predicates: Predicate<T>[]
  ): ControllerBuilder {
    return ControllerBuilder.#from(withWatch(this.#w, watch(r, map, predicates)));
  }

  /** A predicate applied to every watched kind's events. */
  withEventFilter(p: Predicate<KubeObject>): ControllerBuilder {
    return ControllerBuilder.#from(withFilter(this.#w, p));
  }

  /**
   * Sets controller options (merged over earlier calls and the manager's defaults), e.g. `{ maxConcurrentReconciles: 4
   * }`.
   */
  withOptions(options: BuilderOptions): ControllerBuilder {
    return ControllerBuilder.#from(withOptions(this.#w, options));
  }
}

/**
 * A controller builder for the primary kind `P` (`mgr.controller(kind)`, or `for(kind)` on a bare builder): owns and
 * watches other kinds, and ends with `reconcile` (object-first) or `complete` (request-based). `E` is how it may end
 * (`BuilderEnding`): after `onError` or `finalize`, only with `reconcile`.
 */
export class ControllerBuilderFor<P extends KubeObject, E extends BuilderEnding = 'any'> {
  readonly #w: Wiring;
  readonly #p: Primary<P>;
  /** The ending, at run time too (so that a `'object'` builder is not a `'any'` one). */
  readonly #ending: E;

  /** Made by `ControllerBuilder.for(kind)` (or `mgr.controller(kind)`) and by each call on such a builder. */
  constructor(wiring: Wiring, primary: Primary<P>, ending: E) {
    this.#w = wiring;
    this.#p = primary;
    this.#ending = ending;
  }

  /** The controller's name (default: the primary kind, lower-case): in logs and metrics; must be unique. */
  named(name: string): ControllerBuilderFor<P, E> {
    return new ControllerBuilderFor(withName(this.#w, name), this.#p, this.#ending);
  }

  /** A child kind: each change enqueues the primary object that controls it (ownerReference with controller=true). */
  owns<T extends KubeObject>(r: Kind<T, unknown>, ...predicates: Predicate<T>[]): ControllerBuilderFor<P, E> {
    const w = withWatch(this.#w, watch(r, requestsForOwner(this.#p.kind), predicates, 'owned'));
    return new ControllerBuilderFor(w, this.#p, this.#ending);
  }

  /**
   * Any kind, mapped to requests by a function that may be async and reads the cache through its context (`MapFunc`);
   * `referencing(B, 'spec.aRef')` / `byIndex(index)` map a changed A to the Bs that reference it.
   */
  watches<T extends KubeObject>(
    r: Kind<T, unknown>,
    map: MapFunc<T>,
    ...predicates: Predicate<T>[]
  ): ControllerBuilderFor<P, E> {
    return new ControllerBuilderFor(withWatch(this.#w, watch(r, map, predicates)), this.#p, this.#ending);
  }

  /**
   * As `watches`, of a kind in another cache than the controller's (another cluster's): a fleet member's controller
   * watching the manager's own cluster (`member.hub.cache`), e.g. the objects it copies into the member. `map` reads
   * that cache; the cache is its owner's to start.
   */
  watchesIn<T extends KubeObject>(
    cache: Cache,
    r: Kind<T, unknown>,
    map: MapFunc<T>,
    ...predicates: Predicate<T>[]
  ): ControllerBuilderFor<P, E> {
    const w = withWatch(this.#w, watch(r, map, predicates, 'other', cache));
    return new ControllerBuilderFor(w, this.#p, this.#ending);
  }

  /** A predicate applied to every watched kind's events. */
  withEventFilter(p: Predicate<KubeObject>): ControllerBuilderFor<P, E> {
    return new ControllerBuilderFor(withFilter(this.#w, p), this.#p, this.#ending);
  }

  /**
   * Sets controller options (merged over earlier calls and the manager's defaults), e.g. `{ maxConcurrentReconciles: 4
   * }`.
   */
  withOptions(options: BuilderOptions): ControllerBuilderFor<P, E> {
    return new ControllerBuilderFor(withOptions(this.#w, options), this.#p, this.#ending);
  }

  /**
   * Overrides `defaultErrorPolicy` for failures of `reconcile` (and `finalize`), as kube-rs's `error_policy`: gets the
   * object and the error, answers what to do. Failures before the object was read still go to the default policy.
   */
  onError(policy: ObjectErrorPolicy<P>): ControllerBuilderFor<P, 'object'> {
    return new ControllerBuilderFor(this.#w, { ...this.#p, onError: policy }, 'object');
  }

  /**
   * Clean-up for objects being deleted, behind the finalizer `name`: added before `reconcile` first runs, removed
   * once `cleanup` succeeded (see helpers/finalizers.ts).
   */
  finalize(name: string, cleanup: ObjectReconcileFunc<P>): ControllerBuilderFor<P, 'object'> {
    return new ControllerBuilderFor(this.#w, { ...this.#p, finalize: { name, cleanup } }, 'object');
  }

  /**
   * The object-first reconciler (controller/object.ts): `fn(obj, ctx)` gets the primary object — present, and not
   * being deleted unless `finalize` handles that — and a context that sets owner references, records expectations,
   * forwards the reconcile's signal and writes status only on change.
   */
  reconcile(fn: ObjectReconcileFunc<P>): Controller {
    const { kind, onError, finalize } = this.#p;
    const seen = new WeakMap<ReconcileContext, { obj: P; octx: ObjectContext<P> }>();
    const policy: ErrorPolicy | undefined = onError
      ? (err, info) => {
          const at = seen.get(info.ctx);
          return at ? onError(at.obj, err, at.octx) : defaultErrorPolicy(err, info);
        }
      : undefined;
    const reconciler = objectReconciler(kind, fn, {
      ...(finalize ? { finalize } : {}),
      ...(onError ? { onObject: (ctx, obj, octx) => seen.set(ctx, { obj, octx }) } : {}),
    });
    return this.#build(reconciler, policy ? { errorPolicy: policy } : {});
  }

  /**
   * The request-based reconciler (controller/reconcile.ts), the layer below `reconcile`. Not after `onError` or
   * `finalize` (a type error; a `UsageError` for a caller without the types).
   */
  complete(this: ControllerBuilderFor<P, 'any'>, reconciler: Reconciler | ReconcileFunc): Controller {
    if (this.#p.onError || this.#p.finalize) {
      throw new UsageError(
        'InvalidArgument',
        'onError() and finalize() work with reconcile(obj, ctx): call reconcile() instead of complete()',
      );
    }
    return this.#build(typeof reconciler === 'function' ? { reconcile: reconciler } : reconciler, {});
  }

  #build(r: Reconciler, extra: BuilderOptions): Controller {
    const { kind, predicates } = this.#p;
    const { register, defaults: _, everyReplica: __, ...deps } = this.#w.deps;
    const name = this.#w.name ?? kind.kind.toLowerCase();
    const options = mergedOptions(this.#w.deps, { ...this.#w.options, ...extra });
    const c = new Controller({ ...deps, ...options, name }, r);
    for (const add of [watch(kind, requestForObject, predicates, 'primary'), ...this.#w.watches])
      add(c, this.#w.filters);
    register?.(c);
    return c;
  }
}
