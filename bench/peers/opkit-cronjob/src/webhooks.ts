// scaffolded by opkit — this file is yours to edit
/**
 * @module webhooks
 * The project's webhooks: `webhooks()` lists every admission webhook, `conversions` the kinds with several
 * versions served at /convert, `permissions` what the handlers read. `opkit generate` writes the webhook
 * configurations, the Service, the cert-manager Certificate and the RBAC from them; `setupWebhooks` serves them.
 */
import type { Manager, Permission } from '@opkit/runtime';
import { serveWebhooks, type WebhookDefinition } from '@opkit/runtime/webhook';
import { cronjobWebhooks } from './webhooks/cronjob.ts';
// +opkit:scaffold:webhook-imports

/** Kinds whose versions are converted at /convert (kinds made with defineKind({ versions, storage, conversions })). */
export const conversions = [
  // +opkit:scaffold:conversions
];

/** What the webhook handlers read or write (added to the operator's RBAC). */
export const permissions: readonly Permission[] = [];

export function webhooks(): WebhookDefinition[] {
  return [
    ...cronjobWebhooks(),
    // +opkit:scaffold:webhooks
  ];
}

/** Serves every webhook on the manager's webhook server. */
export function setupWebhooks(mgr: Manager): void {
  serveWebhooks(mgr.webhookServer, webhooks(), conversions);
}
