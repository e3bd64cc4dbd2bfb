/**
 * @module webhook/manifests
 * An operator's webhooks described once (`WebhookDefinition`: mutating or validating, which resource, which handler,
 * which operations, the failure policy) and used twice: `serveWebhooks` registers the handlers on the server, and
 * `webhookConfigurations` produces the Mutating/ValidatingWebhookConfiguration objects that make the apiserver call
 * them — so the paths in the configuration and on the server cannot drift apart.
 *
 * Defaults follow kubebuilder: paths `/mutate-<group with dashes>-<version>-<kind>` and `/validate-…`, webhook names
 * `m<kind>-<version>.<group>` / `v<kind>-<version>.<group>`, `failurePolicy: Fail`, `sideEffects: None`,
 * `admissionReviewVersions: [v1]`, `matchPolicy: Equivalent` (a request for another version of the kind is converted
 * and sent too), `timeoutSeconds: 10`.
 *
 * Operations follow the handler (`webhookOperations`): a webhook covers what its handler answers — a `defaulter`
 * CREATE and UPDATE, a `validator` one operation per check it has (`create`, `update`, `delete`), so it covers DELETE
 * only with a `delete` check (under `failurePolicy: Fail` a webhook on DELETE blocks deletes while the operator is
 * down) — and a handler of your own CREATE and UPDATE, as kubebuilder's marker (`verbs=create;update`). Listed
 * `operations` win, also one the handler has no check for (the call is then allowed unchecked: it costs a call, and
 * under `Fail` blocks that operation while the webhook is down, nothing more). A webhook that would be called for
 * nothing (`operations: []`, a validator without checks) is refused with a `UsageError` (`InvalidArgument`) naming it,
 * by `webhookConfigurations`; the apiserver would refuse it too.
 */
import type { Kind, KubeObject } from '../client/resource.ts';
import { UsageError } from '../errors.ts';
import type { AdmissionHandler, Operation } from './admission.ts';
import { type Convertible, converter } from './conversion.ts';
import type { WebhookServer } from './server.ts';

export type { Operation } from './admission.ts';

/**
 * One admission webhook of an operator, described once: `serveWebhooks` serves its handler and `webhookConfigurations`
 * registers it with the apiserver, at the same path.
 */
export interface WebhookDefinition {
  /** `mutating` (a defaulter, may change the object) or `validating` (may only allow or deny). */
  readonly type: 'mutating' | 'validating';
  /** The kind whose writes it sees (its version is the one the webhook is called with). */
  readonly resource: Kind;
  /** What answers the calls (`defaulter(…)` or `validator(…)`). */
  readonly handler: AdmissionHandler;
  /**
   * The operations it is called for. Default: those its handler answers (`handler.operations`: a defaulter's CREATE
   * and UPDATE, a validator's one per check, so DELETE only with a `delete` check), else CREATE and UPDATE.
   */
  readonly operations?: readonly Operation[];
  /** `Fail` (default): writes are refused while the webhook cannot be reached. `Ignore`: they pass unchecked. */
  readonly failurePolicy?: 'Fail' | 'Ignore';
  /** How long the apiserver waits for an answer (default 10, at most 30). */
  readonly timeoutSeconds?: number;
  /** The URL path (default kubebuilder's `/mutate-<group>-<version>-<kind>` or `/validate-…`). */
  readonly path?: string;
  /** The webhook's name in the configuration (default `m<kind>-<version>.<group>` or `v…`). */
  readonly name?: string;
}

/** Where the apiserver reaches the server: a Service (in the cluster) or a base URL (local runs, tests). */
export type WebhookEndpoint =
  | {
      readonly service: { readonly namespace: string; readonly name: string; readonly port?: number };
      readonly caBundle?: string;
    }
  | { readonly url: string; readonly caBundle?: string };

/** The path of the conversion webhook (`/convert`), as the CRD's conversion stanza names it. */
export const CONVERSION_PATH = '/convert';

/** `/mutate-app-example-com-v1-appservice` (or `/validate-…`). */
export function webhookPath(type: WebhookDefinition['type'], r: Kind): string {
  const group = r.group === '' ? 'core' : r.group.replaceAll('.', '-');
  return `/${type === 'mutating' ? 'mutate' : 'validate'}-${group}-${r.version}-${r.kind.toLowerCase()}`;
}

function pathOf(d: WebhookDefinition): string {
  return d.path ?? webhookPath(d.type, d.resource);
}

/** The webhook's name in its configuration: `d.name`, or kubebuilder's `m<kind>-<version>.<group>` / `v…`. */
function nameOf(d: WebhookDefinition): string {
  const r = d.resource;
  const group = r.group === '' ? 'core.k8s.io' : r.group;
  return d.name ?? `${d.type === 'mutating' ? 'm' : 'v'}${r.kind.toLowerCase()}-${r.version}.${group}`;
}

/**
 * The operations `d`'s configuration lists: `d.operations` when given, else those its handler answers, else CREATE
 * and UPDATE. Throws a `UsageError` (`InvalidArgument`) naming the webhook when that is none.
 */
export function webhookOperations(d: WebhookDefinition): Operation[] {
  const refuse = (why: string) => new UsageError('InvalidArgument', `webhook ${nameOf(d)}: ${why}`);
  if (d.operations !== undefined) {
    if (d.operations.length === 0) {
      throw refuse(
        'operations is empty, so the apiserver would never call it (and refuses such a webhook): list the operations, or leave operations out to cover those its handler answers',
      );
    }
    return [...d.operations];
  }
  const answered = d.handler.operations ?? ['CREATE', 'UPDATE'];
  if (answered.length === 0) {
    throw refuse(
      'its validator has no create, update or delete handler, so it would never be called: give it one, or remove the webhook',
    );
  }
  return [...answered];
}

/** Registers every definition's handler (and, for `conversions`, `/convert`) on `server`. */
export function serveWebhooks(
  server: WebhookServer,
  definitions: readonly WebhookDefinition[],
  conversions: readonly Convertible[] = [],
): void {
  for (const d of definitions) server.admission(pathOf(d), d.handler);
  if (conversions.length > 0) server.conversion(CONVERSION_PATH, converter(...conversions));
}

/** The configurations (`<name>-mutating-webhook-configuration`, `<name>-validating-…`) for `definitions`. */
export function webhookConfigurations(
  name: string,
  endpoint: WebhookEndpoint,
  definitions: readonly WebhookDefinition[],
  labels: Record<string, string> = {},
): KubeObject[] {
  const out: KubeObject[] = [];
  for (const type of ['mutating', 'validating'] as const) {
    const defs = definitions.filter((d) => d.type === type);
    if (defs.length === 0) continue;
    out.push({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: type === 'mutating' ? 'MutatingWebhookConfiguration' : 'ValidatingWebhookConfiguration',
      metadata: {
        name: `${name}-${type}-webhook-configuration`,
        ...(Object.keys(labels).length > 0 ? { labels } : {}),
      },
      webhooks: defs.map((d) => webhook(d, endpoint)),
    } as KubeObject);
  }
  return out;
}

function webhook(d: WebhookDefinition, endpoint: WebhookEndpoint): Record<string, unknown> {
  const r = d.resource;
  const path = pathOf(d);
  const operations = webhookOperations(d);
  const clientConfig =
    'service' in endpoint
      ? {
          service: {
            namespace: endpoint.service.namespace,
            name: endpoint.service.name,
            path,
            port: endpoint.service.port ?? 443,
          },
        }
      : { url: `${endpoint.url.replace(/\/$/, '')}${path}` };
  return {
    name: nameOf(d),
    admissionReviewVersions: ['v1'],
    clientConfig: { ...clientConfig, ...(endpoint.caBundle !== undefined ? { caBundle: endpoint.caBundle } : {}) },
    failurePolicy: d.failurePolicy ?? 'Fail',
    matchPolicy: 'Equivalent',
    sideEffects: 'None',
    timeoutSeconds: d.timeoutSeconds ?? 10,
    rules: [
      {
        apiGroups: [r.group],
        apiVersions: [r.version],
        operations,
        resources: [r.plural],
        scope: r.namespaced ? 'Namespaced' : 'Cluster',
      },
    ],
  };
}

/**
 * A copy of `obj` whose webhook client configs — a CRD's conversion webhook, every webhook of a
 * Mutating/ValidatingWebhookConfiguration — call `baseUrl` (keeping each Service path) and trust `caBundle`: how local
 * runs and tests point the generated manifests at a server on loopback. Other objects come back unchanged.
 */
export function pointWebhooksAt(obj: KubeObject, baseUrl: string, caBundle: string): KubeObject {
  const copy = structuredClone(obj) as KubeObject & { spec?: unknown; webhooks?: unknown };
  const local = (cc: { service?: { path?: string }; url?: string } | undefined, path: string) => ({
    url: `${baseUrl.replace(/\/$/, '')}${cc?.service?.path ?? (cc?.url ? new URL(cc.url).pathname : path)}`,
    caBundle,
  });
  if (copy.kind === 'CustomResourceDefinition') {
    const webhook = (copy.spec as { conversion?: { webhook?: { clientConfig?: Record<string, unknown> } } } | undefined)
      ?.conversion?.webhook;
    if (webhook) webhook.clientConfig = local(webhook.clientConfig, CONVERSION_PATH);
  }
  if (
    (copy.kind === 'MutatingWebhookConfiguration' || copy.kind === 'ValidatingWebhookConfiguration') &&
    Array.isArray(copy.webhooks)
  ) {
    for (const w of copy.webhooks as { clientConfig?: Record<string, unknown> }[]) {
      w.clientConfig = local(w.clientConfig, '/');
    }
  }
  return copy;
}
