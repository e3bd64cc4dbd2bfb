/**
 * @module webhooks
 * `installWebhooks(env, options)`: points an operator's webhook configurations and CRD conversions at a webhook
 * server the test runs on loopback, as envtest's WebhookInstallOptions: a CA of its own and a serving certificate
 * for 127.0.0.1 in a fresh directory (`tls.crt` / `tls.key`, the layout of a mounted Secret), a free port, and every
 * `clientConfig` rewritten from its `service` to `url: https://127.0.0.1:<port><service path>` with the CA as
 * `caBundle`.
 *
 * Guarantees: the configurations are created (or replaced, when they exist) and the named CRDs' conversion stanzas
 * patched before the promise resolves; the input objects are not modified. `uninstall()` deletes the configurations
 * it created, so a failing webhook does not block the rest of a shared environment.
 *
 * Caveats: the apiserver calls the URL as soon as the configurations exist; start the server on `port` with the
 * files in `certDir` before writing objects they cover (or use `failurePolicy: Ignore` while starting).
 */
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApiClient } from './api.ts';
import { createLoopbackServingPki } from './certs.ts';
import { TestenvError } from './errors.ts';
import { freePort } from './ports.ts';

type Json = Record<string, unknown>;

/** What `installWebhooks` points at the local server. */
export interface InstallWebhooksOptions {
  /** MutatingWebhookConfiguration and ValidatingWebhookConfiguration objects (as `opkit generate` writes them). */
  readonly configurations?: readonly object[];
  /** Names of CRDs (`appservices.app.example.com`) whose conversion webhook should call the local server. */
  readonly conversions?: readonly string[];
  /** Path of the conversion endpoint (default `/convert`). */
  readonly conversionPath?: string;
  /** Port of the local server (default: a free one). */
  readonly port?: number;
}

/** Where the local webhook server must listen, and with which certificate. */
export interface InstalledWebhooks {
  /** The host the configurations call. */
  readonly host: '127.0.0.1';
  /** The port the configurations call: start the webhook server on it. */
  readonly port: number;
  /** Holds `tls.crt`, `tls.key` and `ca.crt`. */
  readonly certDir: string;
  /** The CA the configurations trust (PEM). */
  readonly caPem: string;
  /** The serving certificate for 127.0.0.1 (PEM), signed by the CA. */
  readonly certPem: string;
  /** Its private key (PEM). */
  readonly keyPem: string;
  /** Deletes the configurations installed here. */
  uninstall(): Promise<void>;
}

const PATHS: Record<string, string> = {
  MutatingWebhookConfiguration: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
  ValidatingWebhookConfiguration: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
};

/**
 * Points the webhook configurations (and the named CRDs' conversions) at a server on 127.0.0.1, as envtest's
 * WebhookInstallOptions: a CA and serving certificate of its own in a fresh directory under `runDir`, a free port, and
 * each `clientConfig` rewritten to that URL. Usually called as `env.installWebhooks(options)`.
 */
export async function installWebhooks(
  api: ApiClient,
  runDir: string,
  options: InstallWebhooksOptions,
): Promise<InstalledWebhooks> {
  const certDir = await mkdtemp(join(runDir, 'webhook-certs-'));
  const { ca, serving } = await createLoopbackServingPki(certDir);
  const port = options.port ?? (await freePort());
  const base = `https://127.0.0.1:${port}`;
  const caBundle = Buffer.from(ca.certPem).toString('base64');
  const installed: string[] = [];

  for (const [i, input] of (options.configurations ?? []).entries()) {
    const config = input as Json;
    const kind = String(config.kind);
    const collection = PATHS[kind];
    const name = (config.metadata as Json | undefined)?.name;
    if (!collection || typeof name !== 'string') {
      throw new TestenvError(
        'InvalidOption',
        `configurations[${i}]: expected a named MutatingWebhookConfiguration or ValidatingWebhookConfiguration, got ${kind}`,
      );
    }
    const copy = structuredClone(config) as Json;
    const webhooks = Array.isArray(copy.webhooks) ? (copy.webhooks as Json[]) : [];
    for (const w of webhooks) w.clientConfig = local(w.clientConfig as Json | undefined, base, caBundle, '/');
    delete (copy.metadata as Json).resourceVersion;
    const existing = await api.request({ path: `${collection}/${name}` });
    const res =
      existing.status === 200
        ? await api
            .request({ method: 'DELETE', path: `${collection}/${name}` })
            .then(() => api.request({ method: 'POST', path: collection, body: copy }))
        : await api.request({ method: 'POST', path: collection, body: copy });
    if (res.status >= 300) {
      throw new TestenvError('ApiRequestFailed', `installing ${kind} ${name}: ${res.status} ${res.text.slice(0, 300)}`);
    }
    installed.push(`${collection}/${name}`);
  }

  for (const crd of options.conversions ?? []) {
    const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}`;
    const patch = {
      spec: {
        conversion: {
          strategy: 'Webhook',
          webhook: {
            conversionReviewVersions: ['v1'],
            clientConfig: { service: null, url: `${base}${options.conversionPath ?? '/convert'}`, caBundle },
          },
        },
      },
    };
    const res = await api.request({ method: 'PATCH', path, body: patch });
    if (res.status >= 300) {
      throw new TestenvError(
        'ApiRequestFailed',
        `pointing ${crd}'s conversion at ${base}: ${res.status} ${res.text.slice(0, 300)}`,
      );
    }
  }

  return {
    host: '127.0.0.1',
    port,
    certDir,
    caPem: ca.certPem,
    certPem: serving.certPem,
    keyPem: serving.keyPem,
    async uninstall() {
      for (const path of installed) await api.request({ method: 'DELETE', path });
    },
  };
}

function local(clientConfig: Json | undefined, base: string, caBundle: string, defaultPath: string): Json {
  const service = clientConfig?.service as Json | undefined;
  let path = typeof service?.path === 'string' ? service.path : defaultPath;
  if (service === undefined && typeof clientConfig?.url === 'string') path = new URL(clientConfig.url).pathname;
  return { url: `${base}${path}`, caBundle };
}
