/**
 * @module controller/builder
 * The common case in one expression, as controller-runtime's builder:
 *
 * ```ts
 * mgr.controller(AppServices, generationChanged)   // reconcile each AppService (or .for(kind) on a bare builder)
 *   .owns(Pods)                                    // … and the AppService controlling a changed Pod
 *   .watches(ConfigMaps, (cm) => [...])            // … and whatever a function maps to
 *   .withOptions({ maxConcurrentReconciles: 4 })
 *   .onError((app, err, ctx) => retryAfter(30_000)) // optional: instead of defaultErrorPolicy
 *   .reconcile(async (app, ctx) => done());         // object-first (controller/object.ts)
 * ```
 * `.complete(reconciler)` takes a request-based reconciler instead (the layer below). The pieces (`Controller.watch`,
 * handlers, predicates, `objectReconciler`) stay usable alone.
 */
import type { KubeObject, ResourceType } from '../client/resource.ts';
import { Controller, type ControllerOptions } from './controller.ts';
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
};
/**
 * A controller's own options (concurrency, rate limiter, error policy, …): `ControllerOptions` without what the builder
 * supplies.
 */
export type BuilderOptions = Omit<ControllerOptions, 'client' | 'cache' | 'log' | 'metrics' | 'clock' | 'name'>;

/** The error policy of one object-first controller: called with the object whose reconcile threw. */
export type ObjectErrorPolicy<T extends KubeObject> = (obj: T, err: unknown, ctx: ObjectContext<T>) => ErrorAction;

interface Source {
  readonly resource: ResourceType<KubeObject>;
  readonly map: MapFunc<KubeObject>;
  readonly predicates: readonly Predicate<KubeObject>[];
}

/** Builds a controller; `P` is the primary kind's object type once `for` named it. */
export class ControllerBuilder<P extends KubeObject = KubeObject> {
  readonly #deps: ControllerDeps;
  #name: string | undefined;
  #for: Source | undefined;
  readonly #sources: Source[] = [];
  readonly #filters: Predicate<KubeObject>[] = [];
  #options: BuilderOptions = {};
  #onError: ObjectErrorPolicy<P> | undefined;
  #finalize: Finalize<P> | undefined;

  constructor(deps: ControllerDeps) {
    this.#deps = deps;
  }

  /** The controller's name (default: the primary kind, lower-case): in logs and metrics; must be unique. */
  named(name: string): this {
    this.#name = name;
    return this;
  }

  /** The primary kind: each change enqueues the object itself. */
  for<T extends KubeObject>(r: ResourceType<T, unknown>, ...predicates: NoInfer<Predicate<T>>[]): ControllerBuilder<T> {
    if (this.#for) throw new TypeError(`for() was already called with ${this.#for.resource.kind}`);
    this.#for = source(r, requestForObject, predicates);
    return this as unknown as ControllerBuilder<T>;
  }

  /** A child kind: each change enqueues the primary object that controls it (ownerReference with controller=true). */
  owns<T extends KubeObject>(r: ResourceType<T, unknown>, ...predicates: Predicate<T>[]): this {
    if (!this.#for) throw new TypeError('call for() before owns(): owns() maps children to the primary kind');
    this.#sources.push(source(r, requestsForOwner(this.#for.resource), predicates));
    return this;
  }

  /** Any kind, mapped to requests by a function. */
  watches<T extends KubeObject>(r: ResourceType<T, unknown>, map: MapFunc<T>, ...predicates: Predicate<T>[]): this {
    this.#sources.push(source(r, map, predicates));
    return this;
  }

  /** A predicate applied to every watched kind's events. */
  withEventFilter(p: Predicate<KubeObject>): this {
    this.#filters.push(p);
    return this;
  }

  /**
   * Sets controller options (merged over earlier calls and the manager's defaults), e.g. `{ maxConcurrentReconciles: 4
   * }`.
   */
  withOptions(options: BuilderOptions): this {
    this.#options = { ...this.#options, ...options };
    return this;
  }

  /**
   * Overrides `defaultErrorPolicy` for failures of `reconcile` (and `finalize`), as kube-rs's `error_policy`: gets the
   * object and the error, answers what to do. Failures before the object was read still go to the default policy.
   */
  onError(policy: ObjectErrorPolicy<P>): this {
    this.#onError = policy;
    return this;
  }

  /**
   * Clean-up for objects being deleted, behind the finalizer `name`: added before `reconcile` first runs, removed
   * once `cleanup` succeeded (see helpers/finalizers.ts).
   */
  finalize(name: string, cleanup: ObjectReconcileFunc<P>): this {
    this.#finalize = { name, cleanup };
    return this;
  }

  /**
   * The object-first reconciler (controller/object.ts): `fn(obj, ctx)` gets the primary object — present, and not
   * being deleted unless `finalize` handles that — and a context that sets owner references, records expectations,
   * forwards the reconcile's signal and writes status only on change.
   */
  reconcile(fn: ObjectReconcileFunc<P>): Controller {
    const primary = this.#for;
    if (!primary) throw new TypeError('a controller needs for(kind): the kind it reconciles');
    const seen = new WeakMap<ReconcileContext, { obj: P; octx: ObjectContext<P> }>();
    const onError = this.#onError;
    const policy: ErrorPolicy | undefined = onError
      ? (err, info) => {
          const at = seen.get(info.ctx);
          return at ? onError(at.obj, err, at.octx) : defaultErrorPolicy(err, info);
        }
      : undefined;
    const reconciler = objectReconciler(primary.resource as unknown as ResourceType<P>, fn, {
      ...(this.#finalize ? { finalize: this.#finalize } : {}),
      ...(onError ? { onObject: (ctx, obj, octx) => seen.set(ctx, { obj, octx }) } : {}),
    });
    return this.#build(reconciler, policy ? { errorPolicy: policy } : {});
  }

  /** The request-based reconciler (controller/reconcile.ts), the layer below `reconcile`. */
  complete(reconciler: Reconciler | ReconcileFunc): Controller {
    if (this.#finalize || this.#onError) {
      throw new TypeError(
        'onError() and finalize() work with reconcile(obj, ctx): call reconcile() instead of complete()',
      );
    }
    return this.#build(typeof reconciler === 'function' ? { reconcile: reconciler } : reconciler, {});
  }

  #build(r: Reconciler, extra: BuilderOptions): Controller {
    if (!this.#for) throw new TypeError('a controller needs for(kind): the kind it reconciles');
    const name = this.#name ?? this.#for.resource.kind.toLowerCase();
    const { register, defaults, ...deps } = this.#deps;
    const c = new Controller({ ...deps, ...defaults, ...this.#options, ...extra, name }, r);
    for (const s of [this.#for, ...this.#sources]) c.watch(s.resource, s.map, [...this.#filters, ...s.predicates]);
    register?.(c);
    return c;
  }
}

function source<T extends KubeObject>(
  r: ResourceType<T, unknown>,
  map: MapFunc<T>,
  predicates: Predicate<T>[],
): Source {
  return {
    resource: r as unknown as ResourceType<KubeObject>,
    map: map as unknown as MapFunc<KubeObject>,
    predicates: predicates as unknown as Predicate<KubeObject>[],
  };
}
