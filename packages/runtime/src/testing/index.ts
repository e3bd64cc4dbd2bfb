/**
 * @module @opkit/runtime/testing
 * Test helpers for an operator's own tests on a real control plane (e.g. `@opkit/testenv`'s `start()`):
 *
 * ```ts
 * import { Pods } from '@opkit/runtime/kinds';
 * import { startTestManager } from '@opkit/runtime/testing';
 * import { start } from '@opkit/testenv';
 * import { AppServices } from './appservice.ts';
 *
 * const env = await start();
 * await using op = await startTestManager(env, {
 *   name: 'appservice-operator',
 *   kinds: [AppServices],
 *   permissions: [],
 *   setup: (mgr) => {
 *     mgr.controller(AppServices).owns(Pods).reconcile(async () => undefined);
 *   },
 * });
 * await op.client.create(AppServices, { metadata: { name: 'web', namespace: 'default' }, spec: { replicas: 2 } });
 * await op.eventually('2 pods', async () => (await op.client.list(Pods, { namespace: 'default' })).items.length === 2);
 * ```
 *
 * `startTestManager` installs the kinds' CRDs (waiting until they are served), applies the ServiceAccount and the
 * RBAC `opkit generate` derives from `permissions` (the same `rbacManifests`, plus what every manager needs), and
 * starts a Manager that authenticates as that ServiceAccount, with metrics and health servers off and a drain time of
 * 250 ms (`gracefulShutdownTimeoutMs`; a Manager's default is 2 s). So a permission
 * missing from `permissions` fails the test with the apiserver's 403 named, not the deployment. Its client writes with
 * `fieldValidation: 'Strict'`, as a deployed manager's does, so a field the CRD lacks fails the test too.
 *
 * `webhooks` serves the project's admission webhooks and conversions through the real apiserver, as main.ts serves
 * them:
 *
 * ```ts
 * import { ApiError } from '@opkit/runtime';
 * import { startTestManager } from '@opkit/runtime/testing';
 * import { defaulter, fieldErrors, validator, type WebhookDefinition } from '@opkit/runtime/webhook';
 * import { start } from '@opkit/testenv';
 * import { AppServices } from './appservice.ts';
 *
 * // what main.ts serves with serveWebhooks(mgr.webhookServer, webhooks)
 * const webhooks: WebhookDefinition[] = [
 *   { type: 'mutating', resource: AppServices, handler: defaulter(AppServices, (app) => void (app.spec.command ??= ['serve'])) },
 *   {
 *     type: 'validating',
 *     resource: AppServices,
 *     handler: validator(AppServices, {
 *       create: (app) => (app.spec.replicas > 10 ? { errors: [fieldErrors.invalid('spec.replicas', app.spec.replicas, 'at most 10')] } : undefined),
 *     }),
 *   },
 * ];
 *
 * const env = await start();
 * await using op = await startTestManager(env, {
 *   name: 'appservice-operator',
 *   kinds: [AppServices],
 *   permissions: [],
 *   setup: () => {},
 *   webhooks: { admission: webhooks },
 * });
 * const app = await op.client.create(AppServices, { metadata: { name: 'web', namespace: 'default' }, spec: {} });
 * console.log(app.spec.command); // ['serve']: defaulted by the webhook
 * const refused = await op.client.create(AppServices, { metadata: { name: 'big', namespace: 'default' }, spec: { replicas: 11 } }).catch((e: unknown) => e);
 * if (refused instanceof ApiError) console.log(refused.code, refused.causes); // Invalid [{ field: 'spec.replicas', … }]
 * ```
 *
 * The manager's webhook server listens on 127.0.0.1 with a certificate from a CA the cluster makes (testenv's
 * `installWebhooks`; a cluster without it gets `WebhooksUnsupported`). When `startTestManager` resolves, the
 * configurations and the CRDs' conversion stanzas point at it and the apiserver already calls them (probed, see
 * testing/webhooks); `stop()` removes them first, on every path, then the manager stops as always, its webhook server
 * answering until its drain time has passed. `admission` may be a function of the manager, for handlers that read its
 * cache; paths `setup` already serves keep their handler.
 *
 * For kinds with several versions, `checkRoundTrip` fuzzes the conversions: it is in its own entry,
 * `@opkit/runtime/testing/roundtrip`, as it needs fast-check (an optional peer dependency this entry never loads).
 *
 * Guarantees: `eventually` polls until its function answers (anything but `undefined`, `null` or `false`) or the
 * timeout passes; a function that throws is polled again, and on timeout the last error is the `cause`. While a test
 * manager runs, its `eventually` fails at once — instead of timing out — when the manager was refused
 * (`TestManagerForbidden`) or stopped with an error (`ManagerFailed`), naming it; `stop()` (also `await using`) removes
 * the webhook configurations, stops the manager and closes its clients — every step, even after one failed — and only then rejects the same way (or
 * `TestManagerStopFailed`), so a cleanup chained after it in a `finally` always runs against a stopped manager.
 */
import { Applier } from '../client/apply.ts';
import { Client } from '../client/client.ts';
import { loadConfig } from '../client/kubeconfig.ts';
import type { KubeObject } from '../client/resource.ts';
import { loggedOnce } from '../client/warnings.ts';
import type { CustomKind } from '../crd/kind.ts';
import { managerPermissions, type Permission, rbacManifests } from '../helpers/rbac.ts';
import { type LogFields, type Logger, silentLogger } from '../logger.ts';
import { Manager } from '../manager/manager.ts';
import { StaticCertificates } from '../tls/sources.ts';
import { CONVERSION_PATH } from '../webhook/manifests.ts';
import { TestingError } from './errors.ts';
import { type Answer, type EventuallyOptions, eventually } from './eventually.ts';
import {
  type InstallTestWebhooks,
  serveTestWebhooks,
  type TestWebhooks,
  type WebhookStart,
  webhookInstaller,
} from './webhooks.ts';

export { TestingError, type TestingErrorCode } from './errors.ts';
export { type Answer, type EventuallyOptions, eventually } from './eventually.ts';
export type { ConvertibleKind, InstallTestWebhooks, TestServingCertificate, TestWebhooks } from './webhooks.ts';

/** What `startTestManager` needs of a cluster: `@opkit/testenv`'s `Environment` has all of it. */
export interface TestCluster {
  /** An admin kubeconfig. */
  readonly kubeconfigPath: string;
  /** A kubeconfig that authenticates as the ServiceAccount (created if missing). */
  kubeconfigFor(sa: { readonly namespace?: string; readonly name: string }): Promise<{ readonly path: string }>;
  /**
   * Points webhook configurations and CRD conversions at a server in this process (for `webhooks`); a cluster whose
   * apiserver cannot reach this process's loopback leaves it out.
   */
  readonly installWebhooks?: InstallTestWebhooks;
}

/** What `startTestManager` starts: the operator's name, kinds, permissions and controllers. */
export interface TestManagerOptions {
  /** The operator's name: the manager's and its ServiceAccount's. */
  readonly name: string;
  /** Everything the operator's controllers declare (their exported `permissions`). */
  readonly permissions: readonly Permission[];
  /** The custom kinds whose CRDs to install first. */
  readonly kinds?: readonly CustomKind<KubeObject, unknown>[];
  /** Registers the controllers (e.g. the `setup…Controller` functions `main.ts` calls). */
  readonly setup: (mgr: Manager) => void | Promise<void>;
  /**
   * The admission webhooks and conversions to serve through the apiserver, as main.ts serves them (see the module
   * comment); needs a cluster with `installWebhooks`.
   */
  readonly webhooks?: TestWebhooks;
  /** The ServiceAccount's namespace (default `default`). */
  readonly namespace?: string;
  /** The manager's logger (default: silent; Forbidden answers are noticed either way). */
  readonly log?: Logger;
  /**
   * Time in-flight reconciles, and with `webhooks` the calls under way, get when the test manager stops (default
   * 250 ms). A Manager's own default, 2 s, keeps its webhook server answering while a Service drops the replica; a test
   * manager's webhook configurations are removed before it stops, so nothing is routed to it then.
   */
  readonly gracefulShutdownTimeoutMs?: number;
}

/** A test manager's drain time, unless `gracefulShutdownTimeoutMs` says otherwise. */
const TEST_DRAIN_MS = 250;

/** A running test manager; `await using` stops it as `stop()` does. */
export interface TestManager extends AsyncDisposable {
  /** The manager, running as the ServiceAccount, with metrics and health servers off. */
  readonly manager: Manager;
  /** An admin client for the test's own reads and writes (closed by `stop`). */
  readonly client: Client;
  /** `eventually` that fails at once when the manager was refused or failed. */
  eventually<T>(what: string, fn: () => Promise<Answer<T>> | Answer<T>, options?: EventuallyOptions): Promise<T>;
  /**
   * Removes the webhook configurations (with `webhooks`), stops the manager and closes both clients — all of it,
   * whatever fails on the way — then rejects when the manager was refused (`TestManagerForbidden`), failed
   * (`ManagerFailed`) or a step of the stop failed (`TestManagerStopFailed`); `cause` is the error, or an
   * `AggregateError` of several.
   */
  stop(): Promise<void>;
}

/** Starts a manager for one test (see the module comment). */
export async function startTestManager(cluster: TestCluster, options: TestManagerOptions): Promise<TestManager> {
  const namespace = options.namespace ?? 'default';
  const installWebhooks = options.webhooks && webhookInstaller(cluster);
  const admin = new Client(await loadConfig({ path: cluster.kubeconfigPath }), { name: `${options.name}-test` });
  let operatorClient: Client;
  try {
    await install(admin, options, namespace);
    const sa = await cluster.kubeconfigFor({ namespace, name: options.name });
    // writes as a manager's own client does (Strict), so a field the CRD lacks fails the test as it fails in a cluster
    operatorClient = new Client(await loadConfig({ path: sa.path }), {
      name: options.name,
      fieldValidation: 'Strict',
      onWarning: loggedOnce((options.log ?? silentLogger).child({ component: 'client' })),
    });
  } catch (err) {
    admin.close();
    throw err;
  }
  let refused: string | undefined;
  const log = noticing(options.log ?? silentLogger, (fields, message) => {
    refused ??= `${message}: ${String(fields.err ?? '')}`;
  });
  const certificates = new StaticCertificates();
  const manager = new Manager({
    name: options.name,
    client: operatorClient,
    log,
    metrics: { bindAddress: '0' },
    health: { bindAddress: '0' },
    controllers: { gracefulShutdownTimeoutMs: options.gracefulShutdownTimeoutMs ?? TEST_DRAIN_MS },
    ...(options.webhooks ? { webhook: { bindAddress: '127.0.0.1:0', certificates } } : {}),
  });
  try {
    await options.setup(manager);
  } catch (err) {
    operatorClient.close();
    admin.close();
    throw err;
  }
  const forbidden = () =>
    refused === undefined
      ? undefined
      : new TestingError(
          'TestManagerForbidden',
          `${options.name} (ServiceAccount ${namespace}/${options.name}) was refused by the apiserver — ${refused}; ` +
            'add the permission to the controller’s permissions',
        );
  const cleanup: Cleanup = {};
  const start = () => running(manager, admin, [operatorClient, admin], forbidden, cleanup);
  if (!installWebhooks || !options.webhooks) return start().testManager;
  const s = { name: options.name, manager, admin, namespace, certificates };
  return withWebhooks(installWebhooks, options.webhooks, s, start, cleanup, [operatorClient, admin]);
}

/** What a stop does first: remove the webhook configurations. */
interface Cleanup {
  uninstall?: () => Promise<void>;
}

/** Starts the test manager serving `webhooks` (testing/webhooks); stops it again when they cannot be installed. */
async function withWebhooks(
  install: InstallTestWebhooks,
  webhooks: TestWebhooks,
  s: Omit<WebhookStart, 'start'>,
  start: () => Running,
  cleanup: Cleanup,
  clients: readonly Client[],
): Promise<TestManager> {
  let started: Running | undefined;
  try {
    const installed = await serveTestWebhooks(install, webhooks, {
      ...s,
      start: () => {
        started = start();
        return started.check;
      },
    });
    cleanup.uninstall = () => installed.uninstall();
    // serveTestWebhooks resolves only once serve (so start) ran; this tells the compiler
    if (!started)
      throw new TestingError('WebhooksNotServed', 'the cluster installed the webhooks without serving them');
  } catch (err) {
    // a started manager's stop closes both clients; before the start, they are closed here
    if (started) await started.testManager.stop().catch(() => {});
    else for (const c of clients) c.close();
    throw err;
  }
  return started.testManager;
}

/** Installs the kinds' CRDs (waiting until each is served), then the ServiceAccount and its RBAC. */
async function install(admin: Client, options: TestManagerOptions, namespace: string): Promise<void> {
  // the field manager @opkit/testenv's start({ crds }) applies CRDs as (its crds.ts): this apply replaces that one's
  const applier = new Applier(admin, 'opkit-test');
  const converted = new Set<CustomKind<KubeObject, unknown>>(options.webhooks?.conversion ?? []);
  const kinds = [...new Set([...(options.kinds ?? []), ...converted])];
  if (kinds.length > 0) {
    // a kind with several versions needs a conversion webhook in its CRD: the Service `opkit generate` names (so an
    // install of the generated manifests and this one apply the same fields), which the cluster points at the test
    // server and back
    const conversion = { service: { namespace, name: `${options.name}-webhook-service`, path: CONVERSION_PATH } };
    await applier.applyAll(kinds.map((k) => (converted.has(k) ? k.crd({ conversion }) : k.crd()) as KubeObject));
    for (const k of kinds) {
      await eventually(`the CRD of ${k.kind} to be served`, async () => {
        await admin.list(k, { pageSize: 1 });
        return true;
      });
    }
  }
  const rbac = rbacManifests(options.name, namespace, [...managerPermissions(false), ...options.permissions]);
  await applier.applyAll(
    [rbac.serviceAccount, rbac.clusterRole, rbac.clusterRoleBinding, rbac.role, rbac.roleBinding].filter(
      (o): o is KubeObject => o !== undefined,
    ),
  );
}

/** A started test manager, and the check that throws once it was refused or failed. */
interface Running {
  readonly testManager: TestManager;
  readonly check: () => void;
}

/** Starts `manager` and answers the running test manager: its checked `eventually` and its `stop`. */
function running(
  manager: Manager,
  admin: Client,
  clients: readonly Client[],
  forbidden: () => TestingError | undefined,
  cleanup: Cleanup,
): Running {
  const stop = new AbortController();
  let failed: unknown;
  const run = manager.start(stop.signal).catch((err: unknown) => {
    failed = err;
  });
  const check = () => {
    const refusal = forbidden();
    if (refusal) throw refusal;
    if (failed !== undefined) {
      throw new TestingError('ManagerFailed', `the manager stopped: ${describe(failed)}`, { cause: failed });
    }
  };
  let stopped: Promise<unknown[]> | undefined;
  const stopAll = async () => {
    stopped ??= stopEverything(stop, run, clients, cleanup);
    const problems = await stopped;
    const refusal = forbidden();
    const causes = [...(failed === undefined ? [] : [failed]), ...problems];
    const cause = causes.length > 1 ? new AggregateError(causes, 'stopping the test manager') : causes[0];
    if (refusal) throw new TestingError(refusal.code, refusal.message, cause === undefined ? undefined : { cause });
    if (failed !== undefined)
      throw new TestingError('ManagerFailed', `the manager stopped: ${describe(failed)}`, { cause });
    if (cause !== undefined)
      throw new TestingError('TestManagerStopFailed', `stopping failed: ${causes.map(describe).join('; ')}`, { cause });
  };
  const testManager: TestManager = {
    manager,
    client: admin,
    eventually: (what, fn, o = {}) => eventually(what, fn, { ...o, check }),
    stop: stopAll,
    [Symbol.asyncDispose]: stopAll,
  };
  return { testManager, check };
}

/**
 * Removes the webhook configurations, stops the manager, waits for it, then closes every client: every step runs, and
 * what failed is answered.
 */
async function stopEverything(stop: AbortController, run: Promise<void>, clients: readonly Client[], cleanup: Cleanup) {
  const problems: unknown[] = [];
  try {
    await cleanup.uninstall?.();
  } catch (err) {
    problems.push(err);
  }
  stop.abort();
  // the manager's drain timers do not hold the process open; this one does, until the manager has stopped
  const alive = setInterval(() => {}, 1_000);
  try {
    await run;
  } finally {
    clearInterval(alive);
  }
  for (const c of clients) {
    try {
      c.close();
    } catch (err) {
      problems.push(err);
    }
  }
  return problems;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A logger that passes everything on and calls `onForbidden` for entries about a Forbidden (403) answer. */
function noticing(log: Logger, onForbidden: (fields: LogFields, message: string) => void): Logger {
  const at =
    (level: 'debug' | 'info' | 'warn' | 'error', inner: Logger) =>
    (fields: LogFields, message: string): void => {
      if (fields.code === 'Forbidden') onForbidden(fields, message);
      inner[level](fields, message);
    };
  const wrap = (inner: Logger): Logger => ({
    debug: at('debug', inner),
    info: at('info', inner),
    warn: at('warn', inner),
    error: at('error', inner),
    child: (bindings) => wrap(inner.child(bindings)),
  });
  return wrap(log);
}
