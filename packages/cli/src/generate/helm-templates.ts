/**
 * @module generate/helm-templates
 * The objects of the chart's `templates/`, made from the install's objects with Helm nodes (generate/helm-yaml.ts)
 * where the values or the release decide:
 * - every object: the project's namespace becomes the release's (`inRelease`);
 * - the manager's Deployment: replicas, image, pull policy, arguments, resources and the metrics port from the values;
 *   with webhooks, the webhook port while the server is on, `ENABLE_WEBHOOKS=false` while it is off, and the
 *   certificate's volume and mount unless the certificate is self-managed;
 * - the metrics Service: HTTPS on 8443 or HTTP on 8080 (`metrics.secure`);
 * - the leader-election Role and RoleBinding: in the Lease's namespace;
 * - a webhook configuration: cert-manager's CA injection only with cert-manager.
 * GUARANTEES: the input objects are not changed, and a key keeps its place in its object.
 */
import type { KubeObject } from '@opkit/runtime';
import type { Deployment, Role, RoleBinding, Service } from '@opkit/runtime/kinds';
import type { Project } from '../project/project.ts';
import type { WebhookShape } from './helm-values.ts';
import { HelmIf, helmBlock, helmExpr, helmIf, helmText, isMapping } from './helm-yaml.ts';

/** The annotation by which cert-manager's CA injector fills a webhook's caBundle: `<namespace>/<Certificate name>`. */
export const INJECT_CA_FROM = 'cert-manager.io/inject-ca-from';

const RELEASE_NAMESPACE = helmExpr('.Release.Namespace');

/** `<svc>.<namespace>.svc[.cluster.local]` in the release's namespace; any other name as it is. */
function serviceDnsName(namespace: string, name: string): unknown {
  const [service = '', ns, ...rest] = name.split('.');
  const suffix = rest.join('.');
  const inCluster = suffix === 'svc' || suffix === 'svc.cluster.local';
  return ns === namespace && inCluster && /^[a-z0-9-]+$/.test(service)
    ? helmText(`${service}.`, RELEASE_NAMESPACE, `.${suffix}`)
    : name;
}

/** The value of the entry `key` of a mapping, in the release's namespace (see `inRelease`). */
function releaseValue(p: Project, key: string, value: unknown): unknown {
  if (value instanceof HelmIf) return helmIf(value.condition, releaseValue(p, key, value.value));
  if (key === 'namespace' && value === p.namespace) return RELEASE_NAMESPACE;
  if (key === INJECT_CA_FROM && typeof value === 'string' && value.startsWith(`${p.namespace}/`)) {
    return helmText(RELEASE_NAMESPACE, value.slice(p.namespace.length));
  }
  if (key === 'dnsNames' && Array.isArray(value)) {
    return value.map((n: unknown) => (typeof n === 'string' ? serviceDnsName(p.namespace, n) : n));
  }
  return inRelease(p, value);
}

/**
 * A copy of `value` in which the project's namespace is the release's in exactly these places: every field named
 * `namespace` (metadata, subjects, a webhook's `clientConfig.service.namespace`, …), the namespace part of the
 * `cert-manager.io/inject-ca-from` annotation, and the namespace label of in-cluster service DNS names in `dnsNames`
 * lists (`<svc>.<namespace>.svc`, `<svc>.<namespace>.svc.cluster.local`). Other strings (a webhook's
 * `clientConfig.url`, free text) are left as they are; so are the Helm nodes already in `value`, except what a
 * `helmIf` guards.
 */
export function inRelease(p: Project, value: unknown): unknown {
  if (value instanceof HelmIf) return helmIf(value.condition, inRelease(p, value.value));
  if (Array.isArray(value)) return value.map((v: unknown) => inRelease(p, v));
  if (!isMapping(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, releaseValue(p, k, v)]));
}

type Container = NonNullable<NonNullable<Deployment['spec']>['template']['spec']>['containers'][number];

/** The manager's container, with what the values and (with webhooks) the webhook server decide. */
function managerContainer(p: Project, c: Container, webhooks: WebhookShape | undefined): Record<string, unknown> {
  const name = p.projectName;
  const server = `include "${name}.webhookServer" .`;
  const ports = c.ports?.map((port) => {
    if (port.name === 'metrics') return { ...port, containerPort: helmExpr(`include "${name}.metricsPort" .`) };
    return webhooks && port.name === 'webhook-server' ? helmIf(server, port) : port;
  });
  // the operator's main.ts serves its webhooks unless ENABLE_WEBHOOKS=false (as kubebuilder's)
  const noWebhooks = helmIf(`not (${server})`, { name: 'ENABLE_WEBHOOKS', value: 'false' });
  return {
    ...c,
    image: helmExpr(`include "${name}.image" . | quote`),
    imagePullPolicy: helmExpr('.Values.image.pullPolicy'),
    args: helmBlock(`include "${name}.args" . | trim`),
    resources: helmBlock('toYaml .Values.resources'),
    ...(ports ? { ports } : {}),
    ...(webhooks ? { env: [...(c.env ?? []), noWebhooks] } : {}),
    ...(webhooks && c.volumeMounts ? { volumeMounts: helmIf(`include "${name}.certVolume" .`, c.volumeMounts) } : {}),
  };
}

/** The manager's Deployment (see the module comment). */
export function deploymentTemplate(p: Project, obj: Deployment, webhooks: WebhookShape | undefined): unknown {
  const spec = obj.spec;
  const pod = spec?.template.spec;
  const [manager, ...others] = pod?.containers ?? [];
  if (!spec || !pod || !manager) return inRelease(p, obj);
  const certVolume = `include "${p.projectName}.certVolume" .`;
  const podSpec = {
    ...pod,
    containers: [managerContainer(p, manager, webhooks), ...others],
    ...(webhooks && pod.volumes ? { volumes: helmIf(certVolume, pod.volumes) } : {}),
  };
  const replicas = helmExpr(`include "${p.projectName}.replicas" .`);
  return inRelease(p, { ...obj, spec: { ...spec, replicas, template: { ...spec.template, spec: podSpec } } });
}

/** The metrics Service: `https` on 8443 or `http` on 8080, as `metrics.secure` says. */
export function metricsServiceTemplate(p: Project, obj: Service): unknown {
  const ports = obj.spec?.ports?.map((port) => ({
    ...port,
    name: helmExpr('ternary "https" "http" .Values.metrics.secure'),
    port: helmExpr(`include "${p.projectName}.metricsPort" .`),
  }));
  return inRelease(p, ports && obj.spec ? { ...obj, spec: { ...obj.spec, ports } } : obj);
}

/** The leader-election Role or RoleBinding, in the Lease's namespace. */
export function leaderElectionTemplate(p: Project, obj: Role | RoleBinding): unknown {
  const namespace = helmExpr('.Values.leaderElection.namespace | default .Release.Namespace');
  return inRelease(p, { ...obj, metadata: { ...obj.metadata, namespace } });
}

/** A webhook configuration, with cert-manager's CA injection only when cert-manager is on. */
export function configurationTemplate(p: Project, obj: KubeObject): unknown {
  const annotations = obj.metadata.annotations ?? {};
  const injection = annotations[INJECT_CA_FROM];
  if (injection === undefined) return inRelease(p, obj);
  const condition = '.Values.certManager.enabled';
  // the only annotation: the whole `annotations:` entry goes, not to leave it empty
  const guarded =
    Object.keys(annotations).length === 1
      ? helmIf(condition, annotations)
      : { ...annotations, [INJECT_CA_FROM]: helmIf(condition, injection) };
  return inRelease(p, { ...obj, metadata: { ...obj.metadata, annotations: guarded } });
}
