/**
 * @module webhook/cabundle
 * Writing the CA bundle the apiserver trusts a webhook with: `clientConfig.caBundle` of every webhook in the named
 * Mutating- and ValidatingWebhookConfigurations, and of the conversion webhook of the named CRDs. Internal to
 * webhook/selfmanaged.
 *
 * Guarantees: the bundle is the PEMs given, trimmed and joined by newlines; an object is patched (a JSON patch of just
 * the `caBundle` fields) only where its bundle differs, so an idle operator writes nothing; a CRD without a conversion
 * webhook is left alone. A failed read or patch throws, and the objects after it are not touched.
 */

import { CustomResourceDefinitions } from '../client/builtins.ts';
import type { Client } from '../client/client.ts';
import { type KubeObject, resource } from '../client/resource.ts';

interface WebhookEntry {
  clientConfig?: { caBundle?: string };
}

const MutatingWebhookConfigurations = resource<KubeObject & { webhooks?: WebhookEntry[] }>({
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  kind: 'MutatingWebhookConfiguration',
  plural: 'mutatingwebhookconfigurations',
  namespaced: false,
});
const ValidatingWebhookConfigurations = resource<KubeObject & { webhooks?: WebhookEntry[] }>({
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  kind: 'ValidatingWebhookConfiguration',
  plural: 'validatingwebhookconfigurations',
  namespaced: false,
});

/** The objects that get the bundle. */
export interface BundleTargets {
  /** The client the objects are read and patched with. */
  readonly client: Client;
  /** MutatingWebhookConfiguration names whose webhooks get the CA bundle. */
  readonly mutatingWebhookConfigurations?: readonly string[];
  /** ValidatingWebhookConfiguration names whose webhooks get the CA bundle. */
  readonly validatingWebhookConfigurations?: readonly string[];
  /** CRD names (`<plural>.<group>`) whose conversion webhook gets the bundle. */
  readonly crds?: readonly string[];
}

/** Sets `caBundle` (the PEMs, concatenated) in every named configuration and CRD where it differs. */
export async function injectBundle(o: BundleTargets, pems: readonly string[], signal?: AbortSignal): Promise<void> {
  const bundle = Buffer.from(`${pems.map((p) => p.trim()).join('\n')}\n`).toString('base64');
  const opts = { type: 'json' as const, ...(signal ? { signal } : {}) };
  for (const [type, names] of [
    [MutatingWebhookConfigurations, o.mutatingWebhookConfigurations ?? []],
    [ValidatingWebhookConfigurations, o.validatingWebhookConfigurations ?? []],
  ] as const) {
    for (const name of names) {
      const config = await o.client.get(type, { name }, signal ? { signal } : {});
      const ops = (config.webhooks ?? []).flatMap((w, i) =>
        w.clientConfig?.caBundle === bundle
          ? []
          : [{ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: bundle }],
      );
      if (ops.length > 0) await o.client.patch(type, { name }, ops, opts);
    }
  }
  for (const name of o.crds ?? []) {
    const crd = await o.client.get(CustomResourceDefinitions, { name }, signal ? { signal } : {});
    const webhook = (crd.spec as { conversion?: { webhook?: { clientConfig?: { caBundle?: string } } } }).conversion
      ?.webhook;
    if (webhook?.clientConfig && webhook.clientConfig.caBundle !== bundle) {
      await o.client.patch(
        CustomResourceDefinitions,
        { name },
        [{ op: 'add', path: '/spec/conversion/webhook/clientConfig/caBundle', value: bundle }],
        opts,
      );
    }
  }
}
