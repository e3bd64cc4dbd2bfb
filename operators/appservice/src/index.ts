/**
 * @opkit/appservice — the AppService reference operator: its API (kind, types, schema), its controller, and helpers
 * to install it from the generated manifests.
 */
export {
  type AppService,
  AppServiceKind,
  type AppServiceSpec,
  type AppServiceStatus,
  AppServices,
} from './api/v1alpha1/appservice.ts';
export {
  permissions,
  podsByInstance,
  reconcileAppService,
  setupAppServiceController,
} from './controllers/appservice.ts';
export { LABELS, plan, podFor, selectorLabels, templateHash } from './controllers/pods.ts';
export {
  applySample,
  installApiAndRbac,
  installObjects,
  NAME,
  NAMESPACE,
  sample,
  serviceAccountKubeconfig,
} from './install.ts';
