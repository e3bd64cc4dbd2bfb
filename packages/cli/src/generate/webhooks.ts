/**
 * @module generate/webhooks
 * The webhook part of `opkit generate`, from the project's `src/webhooks.ts` (as `opkit create webhook` scaffolds
 * it: `webhooks()` → WebhookDefinition[], `conversions` → the kinds served at /convert, `permissions` → what the
 * handlers read): the Mutating/ValidatingWebhookConfigurations and the webhook Service (port 443 → the manager's
 * 9443), the CRDs' conversion stanza pointing at that Service, a cert-manager `Issuer` (self-signed) and
 * `Certificate` whose Secret the Deployment mounts where the manager reads `tls.crt`/`tls.key`, cert-manager's CA
 * injection annotations on the configurations and CRDs, and the handlers' RBAC.
 *
 * Guarantees: a project without `src/webhooks.ts` gets none of this (and the same bytes as before); paths and
 * operations come from the same definitions the operator serves, so configuration and server cannot disagree (a
 * validating webhook covers DELETE only when its validator has a `delete` check, or its definition lists DELETE); a
 * webhook that would be called for nothing fails `loadWebhooks` with a `Usage` error naming the file and the webhook.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type KubeObject, type Permission, UsageError } from '@opkit/runtime';
import type { CrdOptions } from '@opkit/runtime/crd';
import {
  selfManagedRbac,
  type WebhookDefinition,
  webhookConfigurations,
  webhookOperations,
} from '@opkit/runtime/webhook';
import { CliError } from '../errors.ts';
import type { Project } from '../project/project.ts';

export const WEBHOOKS_FILE = 'src/webhooks.ts';
export const CERT_DIR = '/tmp/k8s-webhook-server/serving-certs';

export interface LoadedWebhooks {
  readonly definitions: readonly WebhookDefinition[];
  /** `<plural>.<group>` of each kind served at /convert. */
  readonly conversions: readonly string[];
  readonly permissions: readonly Permission[];
}

interface Convertible {
  readonly definition: { readonly group: string; readonly plural: string };
}

/** Reads src/webhooks.ts, or undefined when the project has none. */
export async function loadWebhooks(dir: string): Promise<LoadedWebhooks | undefined> {
  const file = join(dir, WEBHOOKS_FILE);
  if (!existsSync(file)) return undefined;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (err) {
    throw new CliError('Usage', `cannot load ${file}: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
  if (typeof mod.webhooks !== 'function') {
    throw new CliError(
      'Usage',
      `${file} must export webhooks(): WebhookDefinition[] (as opkit create webhook scaffolds it)`,
    );
  }
  const conversions = Array.isArray(mod.conversions) ? (mod.conversions as Convertible[]) : [];
  const definitions = (mod.webhooks as () => WebhookDefinition[])();
  for (const d of definitions) {
    try {
      webhookOperations(d);
    } catch (err) {
      if (err instanceof UsageError) throw new CliError('Usage', `${WEBHOOKS_FILE}: ${err.message}`, { cause: err });
      throw err;
    }
  }
  return {
    definitions,
    conversions: conversions.map((k) => `${k.definition.plural}.${k.definition.group}`),
    permissions: Array.isArray(mod.permissions) ? (mod.permissions as Permission[]) : [],
  };
}

export const webhookServiceName = (p: Project) => `${p.projectName}-webhook-service`;
export const certificateName = (p: Project) => `${p.projectName}-serving-cert`;
export const certificateSecret = (p: Project) => `${p.projectName}-webhook-server-cert`;
const injectCa = (p: Project) => ({ 'cert-manager.io/inject-ca-from': `${p.namespace}/${certificateName(p)}` });
const labels = (p: Project) => ({ 'app.kubernetes.io/name': p.projectName, 'app.kubernetes.io/managed-by': 'opkit' });

/** `crd()` options for a project: the conversion webhook is the project's webhook Service. */
export function crdOptions(p: Project): CrdOptions {
  return { conversion: { service: { namespace: p.namespace, name: webhookServiceName(p) } } };
}

/** The CRD with cert-manager's CA injection when its conversion goes through the webhook. */
export function withCaInjection(p: Project, crd: KubeObject): KubeObject {
  const spec = (crd as { spec?: { conversion?: { strategy?: string } } }).spec;
  if (spec?.conversion?.strategy !== 'Webhook') return crd;
  return { ...crd, metadata: { ...crd.metadata, annotations: { ...crd.metadata?.annotations, ...injectCa(p) } } };
}

export function webhookServiceObject(p: Project): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: webhookServiceName(p), namespace: p.namespace, labels: labels(p) },
    spec: {
      selector: { ...labels(p), 'control-plane': 'controller-manager' },
      ports: [{ name: 'webhook', port: 443, targetPort: 'webhook-server', protocol: 'TCP' }],
    },
  } as KubeObject;
}

export function configurationObjects(p: Project, w: LoadedWebhooks): KubeObject[] {
  return webhookConfigurations(
    p.projectName,
    { service: { namespace: p.namespace, name: webhookServiceName(p) } },
    w.definitions,
    labels(p),
  ).map((c) => ({ ...c, metadata: { ...c.metadata, annotations: injectCa(p) } }));
}

/** A self-signed Issuer and the serving Certificate for the webhook Service (cert-manager mode). */
export function certManagerObjects(p: Project): KubeObject[] {
  const service = webhookServiceName(p);
  return [
    {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Issuer',
      metadata: { name: `${p.projectName}-selfsigned-issuer`, namespace: p.namespace, labels: labels(p) },
      spec: { selfSigned: {} },
    } as KubeObject,
    {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: certificateName(p), namespace: p.namespace, labels: labels(p) },
      spec: {
        dnsNames: [`${service}.${p.namespace}.svc`, `${service}.${p.namespace}.svc.cluster.local`],
        issuerRef: { kind: 'Issuer', name: `${p.projectName}-selfsigned-issuer` },
        secretName: certificateSecret(p),
      },
    } as KubeObject,
  ];
}

type Container = { ports?: unknown[]; volumeMounts?: unknown[] };
type PodSpec = { containers: Container[]; volumes?: unknown[] };

/** The manager Deployment with the webhook port and the certificate Secret mounted where the manager reads it. */
export function withWebhookServing(p: Project, deployment: KubeObject): KubeObject {
  const copy = structuredClone(deployment) as KubeObject & { spec: { template: { spec: PodSpec } } };
  const pod = copy.spec.template.spec;
  const manager = pod.containers[0];
  if (!manager) return copy;
  manager.ports = [...(manager.ports ?? []), { name: 'webhook-server', containerPort: 9443, protocol: 'TCP' }];
  manager.volumeMounts = [...(manager.volumeMounts ?? []), { name: 'cert', mountPath: CERT_DIR, readOnly: true }];
  pod.volumes = [...(pod.volumes ?? []), { name: 'cert', secret: { secretName: certificateSecret(p) } }];
  return copy;
}

/**
 * RBAC for the self-managed certificate mode (config/selfmanaged): exactly the Secret, the configurations and the
 * CRDs the leader's CertificateRotator writes, bound to the operator's ServiceAccount.
 */
export function selfManagedRbacObjects(p: Project, w: LoadedWebhooks): KubeObject[] {
  const names = configurationObjects(p, w).map((c) => ({ kind: c.kind, name: c.metadata?.name ?? '' }));
  const [role, clusterRole] = selfManagedRbac(p.projectName, {
    namespace: p.namespace,
    secretName: certificateSecret(p),
    mutatingWebhookConfigurations: names.filter((n) => n.kind === 'MutatingWebhookConfiguration').map((n) => n.name),
    validatingWebhookConfigurations: names
      .filter((n) => n.kind === 'ValidatingWebhookConfiguration')
      .map((n) => n.name),
    crds: [...w.conversions],
  });
  const subject = { kind: 'ServiceAccount', name: p.projectName, namespace: p.namespace };
  const ref = (kind: string) => ({
    apiGroup: 'rbac.authorization.k8s.io',
    kind,
    name: `${p.projectName}-webhook-certs`,
  });
  return [
    role as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `${p.projectName}-webhook-certs`, namespace: p.namespace },
      roleRef: ref('Role'),
      subjects: [subject],
    } as KubeObject,
    clusterRole as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `${p.projectName}-webhook-certs` },
      roleRef: ref('ClusterRole'),
      subjects: [subject],
    } as KubeObject,
  ];
}
