/**
 * @module generate/helm-values
 * The chart's `values.yaml` (see generate/helm.ts for what each value does), and what the rest of the chart needs to
 * know of the project to make it: the image's parts and the shape of the project's webhooks.
 * GUARANTEES: the defaults are what dist/install.yaml installs (the image being deployed, the manager's replicas and
 * resources, leader election on, secure metrics, log level info; with webhooks cert-manager and the admission
 * webhooks on), so a chart installed without values runs the same operator as the install.
 */
import type { KubeObject } from '@opkit/runtime';
import type { CustomResourceDefinition, Deployment } from '@opkit/runtime/kinds';
import type { Project } from '../project/project.ts';
import { doc, type LoadedApi, webhooksOf } from './manifests.ts';
import { certificateSecret, webhookServiceName } from './webhooks.ts';

/** An image reference in the chart's terms. */
export interface ImageParts {
  readonly repository: string;
  /** Empty when the reference names no tag. */
  readonly tag: string;
  /** `sha256:…` when the reference pins a digest (`repo@sha256:…` or `repo:tag@sha256:…`), else empty. */
  readonly digest: string;
}

/** `repo/name:tag@digest` → repository, tag and digest (a registry port is not a tag; missing parts are empty). */
export function splitImage(image: string): ImageParts {
  const at = image.indexOf('@');
  const digest = at >= 0 ? image.slice(at + 1) : '';
  const named = at >= 0 ? image.slice(0, at) : image;
  const slash = named.lastIndexOf('/');
  const colon = named.lastIndexOf(':');
  return colon > slash
    ? { repository: named.slice(0, colon), tag: named.slice(colon + 1), digest }
    : { repository: named, tag: '', digest };
}

/** The manager's Deployment among `objects` (by its name), with the fields the values are made from. */
export function managerDeployment(p: Project, objects: readonly KubeObject[]): Deployment | undefined {
  return objects.find((o): o is Deployment => o.kind === 'Deployment' && o.metadata.name === p.projectName);
}

/** What the chart must know of the project's webhooks; undefined for a project without any. */
export interface WebhookShape {
  /** The CRDs (in crds/) whose conversion goes through the webhook Service. */
  readonly conversions: readonly string[];
}

const isCrd = (o: KubeObject): o is CustomResourceDefinition => o.kind === 'CustomResourceDefinition';

/** What the chart must know of the project's webhooks, from its APIs and the objects the chart is made from. */
export function webhookShape(apis: readonly LoadedApi[], objects: readonly KubeObject[]): WebhookShape | undefined {
  const configurations = objects.some((o) => o.kind?.endsWith('WebhookConfiguration'));
  const conversions = objects
    .filter(isCrd)
    .filter((o) => o.spec?.conversion?.strategy === 'Webhook')
    .map((o) => o.metadata.name ?? '');
  return webhooksOf(apis) || configurations || conversions.length > 0 ? { conversions } : undefined;
}

/** values.yaml (without its header comment): the defaults of the install, with the comments a user reads. */
export function valuesYaml(
  p: Project,
  image: ImageParts,
  objects: readonly KubeObject[],
  webhooks: WebhookShape | undefined,
): string {
  const deployment = managerDeployment(p, objects);
  const resources = deployment?.spec?.template.spec?.containers[0]?.resources ?? {};
  const indent = (text: string) =>
    text
      .trimEnd()
      .split('\n')
      .map((l) => `  ${l}`)
      .join('\n');
  return `image:
  repository: ${JSON.stringify(image.repository)}
  # empty: latest
  tag: ${JSON.stringify(image.tag)}
  # sha256:…: the image is pulled by digest (repository@digest), and the tag is ignored
  digest: ${JSON.stringify(image.digest)}
  pullPolicy: IfNotPresent

# 2 replicas with leader election: a standby takes over within seconds when the leader stops. With sharding every
# replica works, each on its share of the objects. Without either (leaderElection.enabled=false and
# sharding.enabled=false) the chart runs 1 replica whatever this says: two would reconcile the same objects.
replicas: ${deployment?.spec?.replicas ?? 1}

resources:
${indent(doc(resources))}

leaderElection:
  enabled: true
  # namespace of the Lease (and its Role); empty: the release's namespace
  namespace: ""

# true: every replica runs the controllers, each on the objects of the buckets it holds (member and fence Leases in
# leaderElection.namespace; a new object gets its bucket label); raise replicas to spread the load
sharding:
  enabled: false
  # how a replica's caches select its buckets: auto (the apiserver's shard selectors where it serves them, KEP-5866,
  # else labels), labels, or server
  filter: auto

metrics:
  # true: HTTPS on 8443, each scrape authenticated by TokenReview and authorized by SubjectAccessReview (bind
  # Prometheus's ServiceAccount to the <name>-metrics-reader ClusterRole); false: plain HTTP on 8080, unauthenticated
  secure: true

# debug, info, warn or error
logLevel: info
${webhooks ? webhookValues(p, webhooks) : ''}`;
}

function webhookValues(p: Project, w: WebhookShape): string {
  const conversion =
    w.conversions.length > 0
      ? `
  # The CRDs in crds/ (${w.conversions.join(', ')}) convert between their versions through the same server: it stays
  # on (Service, port, certificate) whatever this says, so reads and writes of every version keep working.`
      : '';
  return `
certManager:
  # true: cert-manager (it must be installed in the cluster) issues the webhook server's certificate — a self-signed
  # Issuer and a Certificate, whose Secret the manager mounts — and its CA injector writes the CA bundle into the
  # webhook configurations and the CRDs' conversion (the cert-manager.io/inject-ca-from annotations). false: set
  # webhook.certificates to say where the certificate comes from instead.
  enabled: true

webhook:
  # the admission webhooks (defaulting, validation): the Mutating/ValidatingWebhookConfigurations, and the manager's
  # webhook server behind the ${webhookServiceName(p)} Service. false: no admission webhooks (writes are neither
  # defaulted nor checked by the operator's code; the CRDs' own schema and CEL rules still apply).${conversion}
  enabled: true
  # Where the server's certificate comes from when certManager.enabled=false (leave empty with cert-manager):
  #   selfManaged: the operator makes, keeps and rotates it itself, and writes the CA bundle into its webhook
  #     configurations and CRDs (opkit's self-managed mode, run by the operator's main.ts); the chart grants exactly
  #     the RBAC that needs and mounts no Secret.
  #   external: you provide it: the Secret ${certificateSecret(p)} (tls.crt, tls.key) in the release's namespace,
  #     mounted by the manager, and its CA bundle in the webhook configurations and the CRDs' conversion.
  # With neither (webhooks on, cert-manager off) the apiserver could not trust the server: helm refuses to render.
  certificates: ""
`;
}
