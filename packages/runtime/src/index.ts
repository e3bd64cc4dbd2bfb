/**
 * @module @opkit/runtime
 * controller-runtime for TypeScript. This entry point holds what an operator author uses every day:
 *
 * ```ts
 * export type AppService = ObjectOf<typeof AppServices>;
 * mgr.controller(AppServices).owns(Pods).reconcile(async (app, ctx) => {
 *   const pods = await ctx.owned(Pods);
 *   for (let i = pods.length; i < app.spec.replicas; i++) await ctx.create(Pods, podFor(app));
 *   await ctx.status({ replicas: pods.length });
 *   return done();
 * });
 * ```
 * The rest lives in subpaths, one concept each: `/client` (Client, kubeconfig, manifests, selectors), `/kinds` (the
 * built-in kinds: Pods, Deployments, …), `/cache` (informers, stores), `/workqueue` (queue, rate limiters, clock),
 * `/controller` (builder, request-based reconcilers, predicates, expectations), `/helpers` (events, finalizers, owner
 * references, conditions, RBAC, status), `/crd` (definitions and schemas), `/manager` (leader election, settings'
 * parts, logging options, the metrics endpoint), `/metrics`, `/tracing` (trace-context annotations, span attribute
 * names) and `/testing` (a manager on a test cluster, `eventually`).
 */
export { defineIndex } from './cache/indexes.ts';
export { indexers } from './cache/store.ts';
export { ApiError, isConflict, isNotFound } from './client/errors.ts';
export type { InputOf, KubeObject, ObjectOf } from './client/resource.ts';
export type { ObjectContext } from './controller/object.ts';
export { defaultErrorPolicy, type ErrorAction, giveUp, retryAfter, retryWithBackoff } from './controller/policy.ts';
export { generationChanged } from './controller/predicates.ts';
export {
  done,
  type ReconcileContext,
  type Request,
  type Result,
  requeueAfter,
  TerminalError,
} from './controller/reconcile.ts';
export { Defaulted } from './crd/input.ts';
export { defineKind } from './crd/kind.ts';
export { isOpkitError, OpkitError } from './errors.ts';
export { claimChildren } from './helpers/claim.ts';
export { type Condition, getCondition, setCondition } from './helpers/conditions.ts';
export { controllerOf } from './helpers/ownerrefs.ts';
export { type Permission, permission } from './helpers/rbac.ts';
export { createLogger, type Logger, silentLogger } from './logger.ts';
export { Manager, type ManagerOptions } from './manager/manager.ts';
export { defineFlags, SettingsError, settings } from './manager/settings.ts';
