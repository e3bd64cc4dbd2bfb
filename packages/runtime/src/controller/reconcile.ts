/**
 * @module controller/reconcile
 * The reconcile contract. `reconcile(request, ctx)` is level-triggered: it gets the name of an object whose state
 * may need work — never the event that woke it — reads the current state (from the cache) and drives the world
 * toward the desired state. It returns `done()` or `requeueAfter(ms)`; a thrown error is retried with per-key
 * exponential backoff, unless it is a `TerminalError` (retrying cannot help; logged and counted, not retried). A
 * retry or requeue waits in the queue at the priority the request was handed out with, unless the result names
 * another (`requeueAfter(ms, { priority })`, as controller-runtime's `Result.Priority`).
 */

import type { Cache } from '../cache/cache.ts';
import type { Client } from '../client/client.ts';
import type { Kind, KubeObject, ObjectRef } from '../client/resource.ts';
import { OpkitError, UsageError } from '../errors.ts';
import type { EventOptions, EventType } from '../helpers/events.ts';
import type { Logger } from '../logger.ts';
import type { DynamicWatch } from './dynamic.ts';

/** The object to reconcile: namespace (for namespaced kinds) and name. */
export type ReconcileRequest = ObjectRef;

/**
 * What to do after a successful reconcile: nothing until something changes (`done()`), or reconcile again later
 * (`requeueAfter(ms)`).
 */
export interface Result {
  /** Reconcile this request again after this many milliseconds (even if nothing changes). */
  readonly requeueAfterMs?: number;
  /**
   * The queue priority of that requeue (a safe integer; higher is handed out first; changes from the initial list
   * wait at `LOW_PRIORITY`, fresh ones at 0). Default: the priority this request was handed out with.
   */
  readonly priority?: number;
}

/** Nothing more to do until something changes. */
export function done(): Result {
  return {};
}

/** Reconcile again after `ms` milliseconds (at `options.priority`, default: the priority the request had). */
export function requeueAfter(ms: number, options: { readonly priority?: number } = {}): Result {
  if (!(ms > 0)) throw new UsageError('InvalidArgument', `requeueAfter needs a positive delay in ms, got ${ms}`);
  const { priority } = options;
  if (priority === undefined) return { requeueAfterMs: ms };
  if (!Number.isSafeInteger(priority)) {
    throw new UsageError('InvalidArgument', `a requeue priority must be a safe integer, got ${priority}`);
  }
  return { requeueAfterMs: ms, priority };
}

/**
 * Read-your-own-writes for children: after creating or deleting an object, declare it; the next reconcile of the
 * same request waits until the cache has observed the change (or a timeout passes), so a stale cache can never make
 * the controller create a duplicate or delete twice.
 */
export interface Expect {
  /** Declares that this reconcile created `obj` (as the API returned it, with its UID). */
  created<T extends KubeObject>(r: Kind<T>, obj: T): void;
  /** Declares that this reconcile deleted `obj`. */
  deleted<T extends KubeObject>(r: Kind<T>, obj: T): void;
  /**
   * Declares that this reconcile wrote `obj` (an update, a patch or an apply; the object as the API answered it): the
   * next reconcile waits until the cache holds it at that resourceVersion or later. `ctx.update`, `ctx.patch` and
   * `ctx.apply` declare this themselves.
   */
  written<T extends KubeObject>(r: Kind<T>, obj: T): void;
  /**
   * Declares that this reconcile sent a create of `sent` that got no answer (the connection broke, or the request timed
   * out): it may have happened. Before the next reconcile, the kind is listed from the apiserver, and each object the
   * cache lacks that has `sent`'s name (or, for a `generateName`, its controller) is waited for as if declared created.
   * `ctx.create` declares this itself.
   */
  maybeCreated<T extends KubeObject>(r: Kind<T>, sent: T): void;
}

/** How a reconcile records Events: the controller's `EventRecorder` (aggregated and rate limited), or a fake. */
export interface ReconcileEvents {
  /** An Event about `obj` (of kind `r`): `reason` in UpperCamelCase, `message` for people (`EventRecorder.event`). */
  event<C extends KubeObject>(
    r: Kind<C>,
    obj: C,
    type: EventType,
    reason: string,
    message: string,
    options?: EventOptions,
  ): void;
}

/** The fields a reconcile's log lines carry: the request's namespace and name, and the reconcile's ID. */
export function logFields(request: ReconcileRequest, reconcileID: string): Record<string, string> {
  return { ...(request.namespace ? { namespace: request.namespace } : {}), name: request.name, reconcileID };
}

/**
 * What a request-based reconcile gets besides the request: a logger, a signal, the cache, the raw client, expectations
 * and the Event recorder. An object-first reconcile gets more (`ObjectContext`): writes that do the bookkeeping.
 */
export interface ReconcileContext {
  /** Bound with controller, namespace, name and reconcileID (and cluster, in a fleet's member). */
  readonly log: Logger;
  /**
   * The cluster this reconcile is in: the fleet member's name for a controller a fleet runs in a member cluster
   * (multicluster), `''` for the manager's own cluster. `rawClient`, `cache` and the object-first writes are that
   * cluster's.
   */
  readonly cluster: string;
  /** Aborts when the controller stops and the drain period for in-flight reconciles has passed. */
  readonly signal: AbortSignal;
  /** A UUID per reconcile, in every log line of it (as controller-runtime's `reconcileID`). */
  readonly reconcileID: string;
  /**
   * The raw client, bound to `signal` (its requests abort when the reconcile's signal does): no owner references, no
   * expectations. An object-first reconcile writes through `ctx.create`/`apply`/`update`/`patch`/`delete` instead.
   */
  readonly rawClient: Client;
  /** The shared cache, for reads of any kind. */
  readonly cache: Cache;
  /**
   * Declares this reconcile's creates and deletes, so the next reconcile of the request waits until the cache saw them.
   */
  readonly expect: Expect;
  /** The controller's Event recorder (`ctx.events.event(kind, obj, type, reason, message)`). */
  readonly events: ReconcileEvents;
  /** The field manager server-side applies of this controller use. */
  readonly fieldManager: string;
  /**
   * The labels a child of this request's object must carry to land in its shard (sharding; `{}` otherwise).
   * `ctx.create` and `ctx.apply` add them; spread them into a child written with `rawClient`.
   */
  readonly shardLabels: Readonly<Record<string, string>>;
  /**
   * Makes `kinds` the kinds whose changes reconcile this request (a dynamic watch, e.g. of kinds a custom resource
   * names; find a kind named at run time with `kindFor`), each optionally filtered (`{ kind, namespace, labelSelector }`:
   * only changes that pass reconcile it), and resolves once each has synced in `cache`. Kinds it named before and not
   * now are unwatched; an informer no watch needs any more is stopped and its objects dropped. The kinds go when the
   * primary object is gone. Rejects with a `CacheError` naming a kind that cannot be watched (`WatchRefused`: Forbidden,
   * not served or not listable; `CacheSyncTimeout`), which is then not watched while the others are; with
   * `CacheStopped` when the reconcile's signal aborts first (what it named stays, for the retry).
   */
  watchKinds(kinds: readonly DynamicWatch[]): Promise<void>;
}

/** A request-based reconciler (controller-runtime's `Reconciler`): the layer below the object-first one. */
export interface Reconciler {
  /**
   * Drives the object named by `request` toward its desired state; resolves to what to do next (nothing means `done()`)
   * or rejects to go to the error policy.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: an async reconcile without a return statement means done()
  reconcile(request: ReconcileRequest, ctx: ReconcileContext): Promise<Result | undefined | void>;
}

/** A `Reconciler` as a function. */
// biome-ignore lint/suspicious/noConfusingVoidType: as above
export type ReconcileFunc = (request: ReconcileRequest, ctx: ReconcileContext) => Promise<Result | undefined | void>;

/** The code of a `TerminalError`. */
export type TerminalErrorCode =
  /** A reconcile failed in a way retrying cannot fix (bad user input): logged and counted, not requeued. */
  'Terminal';

/** An error that retrying will not fix (bad user input the controller cannot act on). Not requeued. */
export class TerminalError extends OpkitError<TerminalErrorCode> {
  override readonly name = 'TerminalError';

  constructor(message: string, options?: { cause?: unknown }) {
    super('Terminal', message, options);
  }
}

/** Whether `err` is a `TerminalError`. */
export function isTerminalError(err: unknown): err is TerminalError {
  return err instanceof TerminalError;
}

/**
 * A result built without the types (JavaScript, a cast) that still says `requeueAfter`, the field's name before it was
 * `requeueAfterMs`, would silently never requeue: it fails the reconcile instead, naming the field.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: what a reconciler may return
export function refuseRenamedFields(result: Result | undefined | void): void {
  if (typeof result === 'object' && result !== null && 'requeueAfter' in result)
    throw new UsageError(
      'InvalidArgument',
      'a reconcile returned { requeueAfter }: the field is requeueAfterMs (or return requeueAfter(ms))',
    );
}

/** The result's priority if it names a valid one, else the priority the request was handed out with (`handed`). */
export function requeuePriority(result: Result, handed: number, log: Logger): number {
  if (result.priority === undefined) return handed;
  if (Number.isSafeInteger(result.priority)) return result.priority;
  log.error(
    { priority: String(result.priority), handed },
    'the reconcile result has a priority that is not a safe integer: requeueing at the priority it had',
  );
  return handed;
}
