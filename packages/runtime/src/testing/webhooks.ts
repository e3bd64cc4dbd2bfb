/**
 * @module testing/webhooks
 * The `webhooks` option of `startTestManager`: the test manager serves the project's admission webhooks and
 * conversions on its own webhook server (on 127.0.0.1, with a serving certificate from a CA the cluster makes for
 * it), and the cluster points the configurations (from `webhookConfigurations`, as `opkit generate` writes them) and
 * the CRDs' conversion stanzas at it.
 *
 * Guarantees:
 * - Nothing is registered until the manager's webhook server answers a TLS handshake.
 * - When `startTestManager` resolves, the apiserver already calls every configuration and every conversion, not
 *   merely has them: each configuration carries one more webhook, `probe.testing.opkit.dev`, that matches only
 *   ConfigMaps labelled `testing.opkit.dev/webhook-probe`, and each converted kind is probed with a dry-run create in
 *   a version other than its storage version (which the apiserver converts before anything else); the start waits
 *   until every probe reached the server (a conversion probe through one more configuration,
 *   `<name>-test-conversion-probe`, whose webhook sees the kind in its storage version, so the apiserver converts the
 *   probe during admission). The probes write nothing (dry run) and never reach the project's handlers: the project's
 *   webhooks select only objects without the probe label (an `objectSelector` added to the test's copy of each
 *   configuration), and the conversion path answers a review of probe objects itself.
 * - A path `setup` already serves (it called main.ts's `setup…Webhooks(mgr)`) keeps that handler; every other
 *   definition's handler is served here. The conversions are `converter(...conversion)`, what `serveWebhooks`
 *   serves at `/convert`, on a path of their own.
 * - `uninstall` runs first on every stop path, even after a failed start (before the manager drains its webhook
 *   server as the stop contract says): a stopped test leaves no configuration behind to refuse another test's writes,
 *   and each CRD's conversion stanza is back as it was installed.
 *
 * Caveat: the configurations are named after the operator (`<name>-mutating-webhook-configuration`, as
 * `opkit generate` names them), so two test managers of one name must not run at once in one environment: the second
 * replaces the first's configurations, and the first's stop removes them.
 */
import { ConfigMaps } from '../client/builtins.ts';
import type { Client } from '../client/client.ts';
import type { Kind, KubeObject } from '../client/resource.ts';
import type { CustomKind } from '../crd/kind.ts';
import type { Manager } from '../manager/manager.ts';
import type { StaticCertificates } from '../tls/sources.ts';
import type { AdmissionHandler } from '../webhook/admission.ts';
import { type ConversionHandler, type Convertible, converter } from '../webhook/conversion.ts';
import { serveWebhooks, type WebhookDefinition, webhookConfigurations, webhookPath } from '../webhook/manifests.ts';
import { TestingError } from './errors.ts';
import { eventually } from './eventually.ts';

/** A kind with several versions whose conversions the test manager serves (`defineKind({ versions })`). */
export type ConvertibleKind = Convertible &
  CustomKind<KubeObject, unknown> & {
    /** The storage version (the hub). */
    readonly storageVersion: string;
    /** The Kind of each version. */
    readonly versions: Readonly<Record<string, Kind<KubeObject, unknown>>>;
  };

/** The webhooks a test manager serves: what main.ts serves (see the module comment). */
export interface TestWebhooks {
  /**
   * The admission webhooks (the `WebhookDefinition`s main.ts serves), or a function of the manager that makes them
   * (for handlers that read its cache).
   */
  readonly admission?: readonly WebhookDefinition[] | ((mgr: Manager) => readonly WebhookDefinition[]);
  /** The kinds with several versions whose `/convert` the server answers; their CRDs are installed too. */
  readonly conversion?: readonly ConvertibleKind[];
}

/** The serving certificate a cluster hands `serve`. */
export interface TestServingCertificate {
  /** The serving certificate for 127.0.0.1 (PEM), signed by the CA the configurations trust. */
  readonly certPem: string;
  /** Its private key (PEM). */
  readonly keyPem: string;
}

/** What a cluster that can call webhooks on the test's loopback does (`@opkit/testenv`'s `Environment.installWebhooks`). */
export type InstallTestWebhooks = (options: {
  /** Mutating/ValidatingWebhookConfiguration objects to point at the server, then create. */
  readonly configurations: readonly object[];
  /** Names of the CRDs whose conversion webhook to point at the server. */
  readonly conversions: readonly string[];
  /** The path of the conversion webhook on the server. */
  readonly conversionPath: string;
  /** Starts the server with the certificate; resolves with the port it answers on, before anything is registered. */
  readonly serve: (certificate: TestServingCertificate) => Promise<number>;
}) => Promise<{ uninstall(): Promise<void> }>;

/** The label a probe ConfigMap carries: the name of the configuration whose probe it wakes. */
const PROBE_LABEL = 'testing.opkit.dev/webhook-probe';
const PROBE_PATH = '/testing-opkit-dev-webhook-probe';
/** The conversion path: the kinds' `converter`, which also answers the probe objects. */
const CONVERSION_PATH = '/testing-opkit-dev-convert';

/** What `serveTestWebhooks` needs of the test manager being started. */
export interface WebhookStart {
  readonly name: string;
  readonly manager: Manager;
  readonly admin: Client;
  readonly namespace: string;
  /** The webhook server's certificates, empty until the cluster hands its pair to `serve`. */
  readonly certificates: StaticCertificates;
  /** Starts the manager; answers the check that throws once it was refused or failed. */
  readonly start: () => () => void;
}

/** The install function of `cluster`, or a `TestingError` saying why webhooks cannot be served. */
export function webhookInstaller(cluster: { readonly installWebhooks?: InstallTestWebhooks }): InstallTestWebhooks {
  if (cluster.installWebhooks === undefined) {
    throw new TestingError(
      'WebhooksUnsupported',
      'startTestManager({ webhooks }): the cluster has no installWebhooks, so its apiserver cannot call a server in ' +
        'this process; use @opkit/testenv’s start(), or test the handlers without the apiserver',
    );
  }
  return cluster.installWebhooks.bind(cluster);
}

/**
 * Serves `webhooks` on the manager's server, starts the manager, and registers the configurations once the server
 * answers; resolves with `uninstall` once the apiserver calls them.
 */
export async function serveTestWebhooks(
  install: InstallTestWebhooks,
  webhooks: TestWebhooks,
  s: WebhookStart,
): Promise<{ uninstall(): Promise<void> }> {
  const definitions =
    typeof webhooks.admission === 'function' ? webhooks.admission(s.manager) : (webhooks.admission ?? []);
  const server = s.manager.webhookServer;
  const served = new Set(server.paths);
  const conversion = webhooks.conversion ?? [];
  serveWebhooks(
    server,
    definitions.filter((d) => !served.has(d.path ?? webhookPath(d.type, d.resource))),
  );
  const woken = new Set<string>();
  server.admission(PROBE_PATH, probe(woken));
  if (conversion.length > 0) server.conversion(CONVERSION_PATH, probing(converter(...conversion), woken));
  const configurations = webhookConfigurations(s.name, { url: 'https://127.0.0.1' }, definitions).map((c, i) =>
    withProbe(c, `admission-${i}`),
  );
  let check: () => void = () => {};
  let serving = false;
  const installed = await install({
    configurations: [...configurations, ...(conversion.length > 0 ? [conversionProbe(s.name, conversion)] : [])],
    conversions: conversion.map((k) => `${k.plural}.${k.group}`),
    conversionPath: CONVERSION_PATH,
    serve: async (certificate) => {
      serving = true;
      s.certificates.update({ certPem: certificate.certPem, keyPem: certificate.keyPem });
      check = s.start();
      await eventually(
        'the test webhook server to answer',
        async () => {
          await server.ready();
          return true;
        },
        { check },
      );
      return server.port;
    },
  });
  if (!serving) {
    await installed.uninstall().catch(() => {});
    throw new TestingError(
      'WebhooksNotServed',
      'the cluster’s installWebhooks registered the webhooks without calling serve: it must start the server ' +
        'through serve before it registers anything (as @opkit/testenv’s does)',
    );
  }
  try {
    for (const [i, c] of configurations.entries()) {
      await probeUntilWoken(`the apiserver to call the webhooks of ${c.metadata?.name}`, s, check, woken, {
        kind: ConfigMaps,
        key: `admission-${i}`,
      });
    }
    for (const [i, k] of conversion.entries()) {
      const other = Object.keys(k.versions).find((v) => v !== k.storageVersion);
      const kind = other === undefined ? undefined : k.versions[other];
      if (kind === undefined) continue; // one version: nothing to convert
      const what = `the apiserver to call the conversion of ${k.plural}.${k.group}`;
      await probeUntilWoken(what, s, check, woken, { kind, key: `conversion-${i}` });
    }
  } catch (err) {
    await installed.uninstall().catch(() => {});
    throw err;
  }
  return installed;
}

/**
 * Dry-run creates a probe object (labelled `key`) until the server saw it: for a ConfigMap, through the probe webhook
 * of a configuration; for a version of a converted kind, through the conversion to the storage version, which the
 * apiserver does before anything else with the object.
 */
async function probeUntilWoken(
  what: string,
  s: WebhookStart,
  check: () => void,
  woken: ReadonlySet<string>,
  probe: { readonly kind: Kind<KubeObject, unknown>; readonly key: string },
): Promise<void> {
  const metadata = {
    name: `webhook-probe-${probe.key}`,
    ...(probe.kind.namespaced ? { namespace: s.namespace } : {}),
    labels: { [PROBE_LABEL]: probe.key },
  };
  const object = { apiVersion: probe.kind.apiVersion, kind: probe.kind.kind, metadata };
  await eventually(
    what,
    async () => {
      // refused or not (a probe object is no valid object of the kind), what counts is whether the server saw it
      await s.admin.create(probe.kind, object, { dryRun: true }).catch(() => {});
      return woken.has(probe.key);
    },
    { check },
  );
}

/** @internal `convert`, except that a review of probe objects is answered (unconverted but for the apiVersion) and noted. */
export function probing(convert: ConversionHandler, woken: Set<string>): ConversionHandler {
  return async (request, ctx) => {
    const keys = request.objects.map((o) => (o as KubeObject | null)?.metadata?.labels?.[PROBE_LABEL]);
    if (keys.length === 0 || keys.some((k) => k === undefined)) return convert(request, ctx);
    for (const k of keys) if (k !== undefined) woken.add(k);
    const convertedObjects = request.objects.map((o) => ({
      ...(o as KubeObject),
      apiVersion: request.desiredAPIVersion,
    }));
    return { uid: request.uid, convertedObjects, result: { status: 'Success' } };
  };
}

/**
 * The probe handler: allows, and notes which configuration's probe it answered. A conversion probe is noted by the
 * conversion path alone (`probing`): the apiserver converts it for this handler, with whichever conversion is in force.
 */
function probe(woken: Set<string>): AdmissionHandler {
  return async (request) => {
    const labels = (request.object as KubeObject | undefined)?.metadata?.labels;
    const name = labels?.[PROBE_LABEL];
    if (name?.startsWith('admission-')) woken.add(name);
    return { uid: request.uid, allowed: true };
  };
}

/** What every probe webhook is: the probe handler, failing open, quick, with no side effects. */
function probeWebhook(name: string) {
  return {
    name,
    admissionReviewVersions: ['v1'],
    clientConfig: { url: `https://127.0.0.1${PROBE_PATH}` },
    failurePolicy: 'Ignore',
    sideEffects: 'None',
    timeoutSeconds: 5,
  };
}

/**
 * @internal A configuration whose one webhook sees the probe objects of the converted kinds in their storage version
 * (`matchPolicy: Equivalent`): so a dry-run create in another version is converted during admission, before the
 * schema would refuse the probe object and the storage conversion never ran.
 */
export function conversionProbe(name: string, kinds: readonly ConvertibleKind[]): KubeObject {
  const webhook = {
    ...probeWebhook('conversion-probe.testing.opkit.dev'),
    matchPolicy: 'Equivalent',
    objectSelector: { matchExpressions: [{ key: PROBE_LABEL, operator: 'Exists' }] },
    rules: kinds.map((k) => ({
      apiGroups: [k.group],
      apiVersions: [k.storageVersion],
      operations: ['CREATE'],
      resources: [k.plural],
      scope: '*',
    })),
  };
  const metadata = { name: `${name}-test-conversion-probe` };
  const configuration = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata,
    webhooks: [webhook],
  };
  return configuration;
}

/** A webhook of a configuration, as far as `withProbe` reads it. */
interface ConfiguredWebhook {
  readonly objectSelector?: { readonly matchExpressions?: readonly unknown[] };
}

/** `hook` that leaves the probe objects alone (they are no valid objects of the project's kinds). */
function unprobed(hook: ConfiguredWebhook): ConfiguredWebhook {
  const selector = hook.objectSelector ?? {};
  const skipProbes = { key: PROBE_LABEL, operator: 'DoesNotExist' };
  return {
    ...hook,
    objectSelector: { ...selector, matchExpressions: [...(selector.matchExpressions ?? []), skipProbes] },
  };
}

/**
 * @internal `config` with the probe webhook that matches only its own probe ConfigMaps (labelled `key`), and the
 * project's webhooks selecting only objects without the probe label.
 */
export function withProbe(config: KubeObject, key: string): KubeObject & { webhooks?: unknown[] } {
  const c = config as KubeObject & { webhooks?: ConfiguredWebhook[] };
  return {
    ...c,
    webhooks: [
      ...(c.webhooks ?? []).map(unprobed),
      {
        ...probeWebhook('probe.testing.opkit.dev'),
        objectSelector: { matchLabels: { [PROBE_LABEL]: key } },
        rules: [
          { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'], scope: '*' },
        ],
      },
    ],
  };
}
