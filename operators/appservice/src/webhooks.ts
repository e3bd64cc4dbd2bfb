// scaffolded by opkit — this file is yours to edit
/**
 * @module webhooks
 * The AppService operator's webhooks, all on v1 (the storage version; with `matchPolicy: Equivalent` a v1alpha1
 * request is converted and sent here too):
 *
 * - **Defaulting**: `spec.rollout.maxUnavailable`, when unset, becomes a quarter of `spec.replicas` (at least 1). A
 *   schema default is a constant; this one depends on another field.
 * - **Validation**: the image must come from a registry the namespace allows — the Namespace's annotation
 *   `app.example.com/allowed-registries` (comma-separated `registry[/path]` prefixes; no annotation, no restriction).
 *   CEL cannot express this: a CRD's CEL rules see only the object itself (and its old version), never another
 *   object such as its Namespace. An image without a tag or with `:latest` is allowed with a warning, since what
 *   runs would then change whenever the tag moves. Only a changed image is checked on update, so a namespace that
 *   tightens its list does not block scaling or status updates of existing AppServices.
 * - **Conversion**: `/convert` for v1alpha1 ⇄ v1 (api/appservice).
 *
 * Namespaces are read from the manager's cache (list/watch on namespaces), so an admission request makes no API call.
 */
import { type Manager, type Permission, permission } from '@opkit/runtime';
import { type Namespace, Namespaces } from '@opkit/runtime/kinds';
import {
  defaulter,
  fieldErrors,
  serveWebhooks,
  type ValidationResult,
  validator,
  type WebhookDefinition,
} from '@opkit/runtime/webhook';
import { AppServiceKind, AppServicesV1, type AppServiceV1 } from './api/appservice.ts';

export const ALLOWED_REGISTRIES = 'app.example.com/allowed-registries';

/** What the webhooks need besides the request (reads RBAC for `permissions`). */
export const permissions: readonly Permission[] = [permission(Namespaces, ['list', 'watch'])];

/** The kinds whose versions `/convert` serves. */
export const conversions = [AppServiceKind];

export type NamespaceLookup = (name: string) => Promise<Namespace | undefined>;

/** A quarter of the replicas, at least 1. */
export function defaultMaxUnavailable(replicas: number): number {
  return Math.max(1, Math.floor(replicas / 4));
}

export function defaultAppService(app: AppServiceV1): void {
  if (app.spec.rollout === undefined) {
    app.spec.rollout = { maxUnavailable: defaultMaxUnavailable(app.spec.replicas ?? 1) };
  }
}

/** `registry/path` of an image reference, with Docker's defaults (`nginx` → `docker.io/library/nginx`). */
export function imageRepository(image: string): { repository: string; tag: string | undefined; digest: boolean } {
  const at = image.indexOf('@');
  const digest = at >= 0;
  const name = digest ? image.slice(0, at) : image;
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  const hasRegistry = first.includes('.') || first.includes(':') || first === 'localhost';
  let rest = hasRegistry ? name.slice(slash + 1) : name;
  const colon = rest.lastIndexOf(':');
  const tag = colon >= 0 ? rest.slice(colon + 1) : undefined;
  if (colon >= 0) rest = rest.slice(0, colon);
  const registry = hasRegistry ? first : 'docker.io';
  const path = !hasRegistry && !rest.includes('/') ? `library/${rest}` : rest;
  return { repository: `${registry}/${path}`, tag, digest };
}

/** True when `repository` is under one of the comma-separated `allowed` prefixes. */
export function registryAllowed(repository: string, allowed: string): boolean {
  return allowed
    .split(',')
    .map((a) => a.trim().replace(/\/+$/, ''))
    .filter((a) => a !== '')
    .some((a) => repository === a || repository.startsWith(`${a}/`));
}

async function checkImage(app: AppServiceV1, namespaces: NamespaceLookup): Promise<ValidationResult> {
  const image = app.spec.template.image;
  const field = 'spec.template.image';
  const { repository, tag, digest } = imageRepository(image);
  const warnings: string[] = [];
  if (!digest && (tag === undefined || tag === 'latest')) {
    warnings.push(`${field}: ${JSON.stringify(image)} has no fixed tag: pods will run whatever :latest points to`);
  }
  const ns = app.metadata.namespace ? await namespaces(app.metadata.namespace) : undefined;
  const allowed = ns?.metadata?.annotations?.[ALLOWED_REGISTRIES];
  if (allowed !== undefined && !registryAllowed(repository, allowed)) {
    return {
      errors: [
        fieldErrors.invalid(
          field,
          image,
          `${repository} is not from a registry namespace ${app.metadata.namespace} allows (${ALLOWED_REGISTRIES}: ${allowed})`,
        ),
      ],
      warnings,
    };
  }
  return { warnings };
}

const noLookup: NamespaceLookup = async () => {
  throw new Error('no Namespace lookup: build the webhooks with setupAppServiceWebhooks(mgr)');
};

/** The AppService webhooks; `namespaces` reads a Namespace (the manager's cache in the operator). */
export function webhooks(namespaces: NamespaceLookup = noLookup): WebhookDefinition[] {
  return [
    { type: 'mutating', resource: AppServicesV1, handler: defaulter(AppServicesV1, defaultAppService) },
    {
      type: 'validating',
      resource: AppServicesV1,
      operations: ['CREATE', 'UPDATE'],
      handler: validator(AppServicesV1, {
        create: (app) => checkImage(app, namespaces),
        update: (app, old) =>
          app.spec.template.image === old.spec.template.image ? undefined : checkImage(app, namespaces),
      }),
    },
  ];
}

/** Serves the AppService webhooks and conversions on the manager's webhook server. */
export function setupAppServiceWebhooks(mgr: Manager): void {
  serveWebhooks(
    mgr.webhookServer,
    webhooks((name) => mgr.cache.get(Namespaces, { name })),
    conversions,
  );
}
