/**
 * @module controller/builder
 * The common case in one expression, as controller-runtime's builder:
 *
 * ```ts
 * const c = new ControllerBuilder({ client, cache })
 *   .for(AppServices, generationChanged)          // reconcile each AppService
 *   .owns(Pods)                                   // … and the AppService controlling a changed Pod
 *   .watches(ConfigMaps, (cm) => [...])           // … and whatever a function maps to
 *   .withOptions({ maxConcurrentReconciles: 4 })
 *   .complete(async (req, ctx) => done());
 * await c.start(signal);
 * ```
 * The pieces (`Controller.watch`, handlers, predicates) stay usable alone.
 */
import type { KubeObject, ResourceType } from '../client/resource.ts';
import { Controller, type ControllerOptions } from './controller.ts';
import { type MapFunc, requestForObject, requestsForOwner } from './handlers.ts';
import type { Predicate } from './predicates.ts';
import type { ReconcileFunc, Reconciler } from './reconcile.ts';

export type ControllerDeps = Pick<ControllerOptions, 'client' | 'cache' | 'log' | 'metrics' | 'clock'> & {
  /** Called with the finished controller (the manager uses it to run the controller). */
  readonly register?: (controller: Controller) => void;
  /** Defaults for every controller built with these deps (e.g. the manager's settings). */
  readonly defaults?: BuilderOptions;
};
export type BuilderOptions = Omit<ControllerOptions, 'client' | 'cache' | 'log' | 'metrics' | 'clock' | 'name'>;

interface Source {
  readonly resource: ResourceType<KubeObject>;
  readonly map: MapFunc<KubeObject>;
  readonly predicates: readonly Predicate<KubeObject>[];
}

export class ControllerBuilder {
  readonly #deps: ControllerDeps;
  #name: string | undefined;
  #for: Source | undefined;
  readonly #sources: Source[] = [];
  readonly #filters: Predicate<KubeObject>[] = [];
  #options: BuilderOptions = {};

  constructor(deps: ControllerDeps) {
    this.#deps = deps;
  }

  /** The controller's name (default: the primary kind, lower-case): in logs and metrics; must be unique. */
  named(name: string): this {
    this.#name = name;
    return this;
  }

  /** The primary kind: each change enqueues the object itself. */
  for<T extends KubeObject>(r: ResourceType<T>, ...predicates: Predicate<T>[]): this {
    if (this.#for) throw new TypeError(`for() was already called with ${this.#for.resource.kind}`);
    this.#for = source(r, requestForObject, predicates);
    return this;
  }

  /** A child kind: each change enqueues the primary object that controls it (ownerReference with controller=true). */
  owns<T extends KubeObject>(r: ResourceType<T>, ...predicates: Predicate<T>[]): this {
    if (!this.#for) throw new TypeError('call for() before owns(): owns() maps children to the primary kind');
    this.#sources.push(source(r, requestsForOwner(this.#for.resource), predicates));
    return this;
  }

  /** Any kind, mapped to requests by a function. */
  watches<T extends KubeObject>(r: ResourceType<T>, map: MapFunc<T>, ...predicates: Predicate<T>[]): this {
    this.#sources.push(source(r, map, predicates));
    return this;
  }

  /** A predicate applied to every watched kind's events. */
  withEventFilter(p: Predicate<KubeObject>): this {
    this.#filters.push(p);
    return this;
  }

  withOptions(options: BuilderOptions): this {
    this.#options = { ...this.#options, ...options };
    return this;
  }

  complete(reconciler: Reconciler | ReconcileFunc): Controller {
    if (!this.#for) throw new TypeError('a controller needs for(kind): the kind it reconciles');
    const r: Reconciler = typeof reconciler === 'function' ? { reconcile: reconciler } : reconciler;
    const name = this.#name ?? this.#for.resource.kind.toLowerCase();
    const { register, defaults, ...deps } = this.#deps;
    const c = new Controller({ ...deps, ...defaults, ...this.#options, name }, r);
    for (const s of [this.#for, ...this.#sources]) c.watch(s.resource, s.map, [...this.#filters, ...s.predicates]);
    register?.(c);
    return c;
  }
}

function source<T extends KubeObject>(r: ResourceType<T>, map: MapFunc<T>, predicates: Predicate<T>[]): Source {
  return {
    resource: r as unknown as ResourceType<KubeObject>,
    map: map as unknown as MapFunc<KubeObject>,
    predicates: predicates as unknown as Predicate<KubeObject>[],
  };
}
