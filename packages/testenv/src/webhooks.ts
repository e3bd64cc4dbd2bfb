/**
 * @module webhooks
 * `installWebhooks(env, options)`: points an operator's webhook configurations and CRD conversions at a webhook
 * server the test runs on loopback, as envtest's WebhookInstallOptions: a CA of its own and a serving certificate
 * for 127.0.0.1 in a fresh directory (`tls.crt` / `tls.key`, the layout of a mounted Secret), a port, and every
 * `clientConfig` rewritten from its `service` to `url: https://127.0.0.1:<port><service path>` with the CA as
 * `caBundle`.
 *
 * Guarantees: with `serve`, nothing is registered until `serve` (handed the certificate) resolves with the port its
 * server answers on, so the apiserver never calls a server that is not there yet. The configurations are created (or
 * replaced, when they exist) and the named CRDs' conversion stanzas patched before the promise resolves; when one of
 * those writes fails, what was already written is undone before the promise rejects. The input objects are not
 * modified. `uninstall()` deletes the configurations it created and puts each patched CRD's conversion stanza back as
 * it found it, so a stopped test server blocks nothing in a shared environment; it does every step even when one
 * fails (then it rejects with the first failure), and a second call does nothing.
 *
 * Caveats: without `serve`, the apiserver calls the URL as soon as the configurations exist; start the server on
 * `port` with the files in `certDir` before writing objects they cover (or use `failurePolicy: Ignore` while
 * starting). The apiserver picks up a new configuration from its own watch, a moment after it is written.
 */
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApiClient } from './api.ts';
import { createLoopbackServingPki } from './certs.ts';
import { TestenvError } from './errors.ts';
import { freePort } from './ports.ts';

type Json = Record<string, unknown>;

/** The certificate a local webhook server serves: what `serve` is handed. */
export interface WebhookServingCertificate {
  /** Holds `tls.crt`, `tls.key` and `ca.crt`. */
  readonly certDir: string;
  /** The CA the configurations trust (PEM). */
  readonly caPem: string;
  /** The serving certificate for 127.0.0.1 (PEM), signed by the CA. */
  readonly certPem: string;
  /** Its private key (PEM). */
  readonly keyPem: string;
}

/** What `installWebhooks` points at the local server. */
export interface InstallWebhooksOptions {
  /** MutatingWebhookConfiguration and ValidatingWebhookConfiguration objects (as `opkit generate` writes them). */
  readonly configurations?: readonly object[];
  /** Names of CRDs (`appservices.app.example.com`) whose conversion webhook should call the local server. */
  readonly conversions?: readonly string[];
  /** Path of the conversion endpoint (default `/convert`). */
  readonly conversionPath?: string;
  /** Port of the local server (default: a free one, or the one `serve` answers). */
  readonly port?: number;
  /**
   * Starts the server with the certificate and resolves with the port it answers on, before anything is registered.
   * A rejection rejects `installWebhooks` with it, with nothing registered.
   */
  readonly serve?: (certificate: WebhookServingCertificate) => Promise<number>;
}

/** Where the local webhook server must listen, and with which certificate. */
export interface InstalledWebhooks extends WebhookServingCertificate {
  /** The host the configurations call. */
  readonly host: '127.0.0.1';
  /** The port the configurations call: start the webhook server on it. */
  readonly port: number;
  /** Deletes the configurations installed here and restores the CRDs' conversion stanzas (see the module comment). */
  uninstall(): Promise<void>;
}

const PATHS: Record<string, string> = {
  MutatingWebhookConfiguration: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
  ValidatingWebhookConfiguration: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
};

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/**
 * Points the webhook configurations (and the named CRDs' conversions) at a server on 127.0.0.1, as envtest's
 * WebhookInstallOptions: a CA and serving certificate of its own in a fresh directory under `runDir`, a port, and
 * each `clientConfig` rewritten to that URL. Usually called as `env.installWebhooks(options)`.
 */
export async function installWebhooks(
  api: ApiClient,
  runDir: string,
  options: InstallWebhooksOptions,
): Promise<InstalledWebhooks> {
  const configurations = (options.configurations ?? []).map(checked);
  const certDir = await mkdtemp(join(runDir, 'webhook-certs-'));
  const { ca, serving } = await createLoopbackServingPki(certDir);
  const certificate = { certDir, caPem: ca.certPem, certPem: serving.certPem, keyPem: serving.keyPem };
  const port = options.serve ? await options.serve(certificate) : (options.port ?? (await freePort()));
  const base = `https://127.0.0.1:${port}`;
  const caBundle = Buffer.from(ca.certPem).toString('base64');
  const undo: (() => Promise<void>)[] = [];
  const uninstall = once(async () => {
    const failures: unknown[] = [];
    for (const step of undo.reverse()) await step().catch((err: unknown) => failures.push(err));
    if (failures.length > 0) throw failures[0];
  });
  try {
    for (const config of configurations) undo.push(await register(api, config, base, caBundle));
    for (const crd of options.conversions ?? []) {
      undo.push(await pointConversion(api, crd, `${base}${options.conversionPath ?? '/convert'}`, caBundle));
    }
  } catch (err) {
    await uninstall().catch(() => {});
    throw err;
  }
  return { host: '127.0.0.1', port, ...certificate, uninstall };
}

interface Configuration {
  readonly kind: string;
  readonly name: string;
  readonly collection: string;
  readonly object: Json;
}

function checked(input: object, i: number): Configuration {
  const object = input as Json;
  const kind = String(object.kind);
  const collection = PATHS[kind];
  const name = (object.metadata as Json | undefined)?.name;
  if (!collection || typeof name !== 'string') {
    throw new TestenvError(
      'InvalidOption',
      `configurations[${i}]: expected a named MutatingWebhookConfiguration or ValidatingWebhookConfiguration, got ${kind}`,
    );
  }
  return { kind, name, collection, object };
}

/** Creates (or replaces) the configuration, pointed at `base`; answers the step that deletes it. */
async function register(api: ApiClient, config: Configuration, base: string, caBundle: string) {
  const copy = structuredClone(config.object);
  const webhooks = Array.isArray(copy.webhooks) ? (copy.webhooks as Json[]) : [];
  for (const w of webhooks) w.clientConfig = local(w.clientConfig as Json | undefined, base, caBundle, '/');
  delete (copy.metadata as Json).resourceVersion;
  const path = `${config.collection}/${config.name}`;
  const existing = await api.request({ path });
  if (existing.status === 200) await api.request({ method: 'DELETE', path });
  const res = await api.request({ method: 'POST', path: config.collection, body: copy });
  if (res.status >= 300) {
    throw new TestenvError(
      'ApiRequestFailed',
      `installing ${config.kind} ${config.name}: ${res.status} ${res.text.slice(0, 300)}`,
    );
  }
  return async () => {
    const gone = await api.request({ method: 'DELETE', path });
    if (gone.status >= 300 && gone.status !== 404) {
      throw new TestenvError('ApiRequestFailed', `deleting ${config.kind} ${config.name}: ${gone.status} ${gone.text}`);
    }
  };
}

/** Points the CRD's conversion webhook at `url`; answers the step that puts its conversion stanza back. */
async function pointConversion(api: ApiClient, crd: string, url: string, caBundle: string) {
  const path = `${CRDS}/${crd}`;
  const before = await api.request<{ spec?: { conversion?: Json } }>({ path });
  if (before.status >= 300) {
    throw new TestenvError('ApiRequestFailed', `reading CRD ${crd}: ${before.status} ${before.text.slice(0, 300)}`);
  }
  const conversion = {
    strategy: 'Webhook',
    webhook: { conversionReviewVersions: ['v1'], clientConfig: { url, caBundle } },
  };
  await replaceConversion(api, crd, conversion, `pointing ${crd}'s conversion at ${url}`);
  const original = (typeof before.body === 'object' ? before.body.spec?.conversion : undefined) ?? { strategy: 'None' };
  // a CRD deleted in the meantime has nothing to restore
  return () => replaceConversion(api, crd, original, `restoring ${crd}'s conversion`, true);
}

async function replaceConversion(
  api: ApiClient,
  crd: string,
  conversion: Json,
  what: string,
  goneIsDone = false,
): Promise<void> {
  const res = await api.request({
    method: 'PATCH',
    path: `${CRDS}/${crd}`,
    contentType: 'application/json-patch+json',
    body: [{ op: 'replace', path: '/spec/conversion', value: conversion }],
  });
  if (res.status === 404 && goneIsDone) return;
  if (res.status >= 300) throw new TestenvError('ApiRequestFailed', `${what}: ${res.status} ${res.text.slice(0, 300)}`);
}

function local(clientConfig: Json | undefined, base: string, caBundle: string, defaultPath: string): Json {
  const service = clientConfig?.service as Json | undefined;
  let path = typeof service?.path === 'string' ? service.path : defaultPath;
  if (service === undefined && typeof clientConfig?.url === 'string') path = new URL(clientConfig.url).pathname;
  return { url: `${base}${path}`, caBundle };
}

function once(f: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => {
    done ??= f();
    return done;
  };
}
