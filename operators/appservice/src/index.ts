/**
 * @opkit/appservice — the AppService reference operator: its API (kind, types, schema), its reconciler and the
 * manifests generated from them.
 */
export {
  type AppService,
  AppServiceKind,
  type AppServiceSpec,
  type AppServiceStatus,
  AppServices,
} from './api/v1alpha1/appservice.ts';
export { AppServiceReconciler, permissions } from './controller/appservice.ts';
export { LABELS, plan, podFor, selectorLabels, templateHash } from './controller/pods.ts';
export { applySample, installApiAndRbac, serviceAccountKubeconfig } from './install.ts';
export { installYaml, manifests, NAME, NAMESPACE, rbac, sample } from './manifests.ts';
