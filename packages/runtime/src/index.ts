/**
 * @module @opkit/runtime
 * controller-runtime for TypeScript. This entry point holds what an operator author uses every day:
 *
 * ```ts
 * import { defineKind, done, Manager, type ObjectOf } from '@opkit/runtime';
 * import { Pods } from '@opkit/runtime/kinds';
 * import { Type } from '@sinclair/typebox';
 *
 * export const AppServices = defineKind({
 *   group: 'app.example.com', version: 'v1', kind: 'AppService', plural: 'appservices',
 *   spec: Type.Object({ replicas: Type.Integer(), image: Type.String() }),
 *   status: Type.Object({ replicas: Type.Integer() }),
 *   subresources: { status: true },
 * });
 * export type AppService = ObjectOf<typeof AppServices>;
 *
 * const mgr = await Manager.create({ name: 'appservice-operator' });
 * mgr.controller(AppServices).owns(Pods).reconcile(async (app, ctx) => {
 *   const pods = await ctx.owned(Pods);
 *   for (let i = pods.length; i < app.spec.replicas; i++) {
 *     const container = { name: 'app', image: app.spec.image };
 *     pods.push(await ctx.create(Pods, { metadata: { generateName: 'app-' }, spec: { containers: [container] } }));
 *   }
 *   await ctx.status({ replicas: pods.length });
 *   return done();
 * });
 * await mgr.run();
 * ```
 *
 * The rule of this facade: a concept's names live together in exactly one entry point, with its types and the error
 * classes its calls throw. The root holds, whole, the concepts every operator uses (what the tutorial, docs/runtime.md
 * and the AppService operator write): defining a kind (`defineKind`, `Defaulted`, `ObjectOf`, `InputOf`,
 * `CrdSchemaError`); the manager and its settings (`Manager`, `ManagerError`, `settings`, `SettingsError`); the
 * object reconciler's contract (`ObjectContext`, `done`, `requeueAfter`, `ReconcileRequest`, `Result`, `TerminalError`);
 * the errors every call may throw (`OpkitError`, `UsageError`, `ApiError` with all its predicates: `isNotFound`,
 * `isConflict`, `isAlreadyExists`, `isGone`, …); all the condition helpers; permissions; cache indexes. Every other
 * concept lives whole in its subpath, even when one of its names is common: predicates (`generationChanged`) and the
 * error policy (`retryAfter`, `giveUp`, …) in `/controller`, owner references and adoption (`controllerOf`,
 * `claimChildren`) in `/helpers`, the logger (`createLogger`, `silentLogger`) in `/manager`.
 *
 * The subpaths, one concept each: `/client` (Client, kubeconfig, manifests, selectors), `/kinds` (the built-in kinds:
 * Pods, Deployments, …), `/cache` (informers, stores), `/workqueue` (queue, rate limiters, clock), `/controller`
 * (builder, request-based reconcilers, predicates, error policy, expectations), `/helpers` (events, finalizers, owner
 * references and adoption, RBAC, status), `/crd` (definitions and schemas), `/manager` (leader election, settings'
 * parts, the logger, the metrics endpoint), `/metrics`, `/tracing` (trace-context annotations, span attribute names),
 * `/testing` (a manager on a test cluster, `eventually`) and `/testing/roundtrip` (conversion round trips; needs
 * fast-check).
 */
export { defineIndex } from './cache/indexes.ts';
export { indexers } from './cache/store.ts';
export {
  ApiError,
  type ApiErrorCode,
  isAlreadyExists,
  isApiError,
  isConflict,
  isGone,
  isNotFound,
  isResourceVersionTooLarge,
} from './client/errors.ts';
export type { InputOf, KubeObject, ObjectOf } from './client/resource.ts';
export type { ObjectContext } from './controller/object.ts';
export {
  done,
  type ReconcileRequest,
  type Result,
  requeueAfter,
  TerminalError,
} from './controller/reconcile.ts';
export { Defaulted } from './crd/input.ts';
export { defineKind } from './crd/kind.ts';
export { CrdSchemaError, type CrdSchemaErrorCode } from './crd/schema.ts';
export { OpkitError, UsageError, type UsageErrorCode } from './errors.ts';
export {
  type Condition,
  type ConditionInput,
  type ConditionStatus,
  getCondition,
  isConditionFalse,
  isConditionTrue,
  isConditionUnknown,
  removeCondition,
  setCondition,
} from './helpers/conditions.ts';
export { type Permission, permission } from './helpers/rbac.ts';
export { Manager, ManagerError, type ManagerErrorCode, type ManagerOptions } from './manager/manager.ts';
export { defineFlags, SettingsError, type SettingsErrorCode, settings } from './manager/settings.ts';
