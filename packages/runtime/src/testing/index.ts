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
 * starts a Manager that authenticates as that ServiceAccount, with metrics and health servers off. So a permission
 * missing from `permissions` fails the test with the apiserver's 403 named, not the deployment.
 *
 * For kinds with several versions, `checkRoundTrip` fuzzes the conversions: it is in its own entry,
 * `@opkit/runtime/testing/roundtrip`, as it needs fast-check (an optional peer dependency this entry never loads).
 *
 * Guarantees: `eventually` polls until its function answers (anything but `undefined`, `null` or `false`) or the
 * timeout passes; a function that throws is polled again, and on timeout the last error is the `cause`. While a test
 * manager runs, its `eventually` fails at once — instead of timing out — when the manager was refused
 * (`TestManagerForbidden`) or stopped with an error (`ManagerFailed`), naming it; `stop()` (also `await using`) stops
 * the manager and closes its clients — every step, even after one failed — and only then rejects the same way (or
 * `TestManagerStopFailed`), so a cleanup chained after it in a `finally` always runs against a stopped manager.
 */
import { Applier } from '../client/apply.ts';
import { Client } from '../client/client.ts';
import { loadConfig } from '../client/kubeconfig.ts';
import type { KubeObject } from '../client/resource.ts';
import type { CustomKind } from '../crd/kind.ts';
import { managerPermissions, type Permission, rbacManifests } from '../helpers/rbac.ts';
import { type LogFields, type Logger, silentLogger } from '../logger.ts';
import { Manager } from '../manager/manager.ts';
import { TestingError } from './errors.ts';

export { TestingError, type TestingErrorCode } from './errors.ts';

/** How long and how often `eventually` polls. */
export interface EventuallyOptions {
  /** Default 30 s. */
  readonly timeoutMs?: number;
  /** Default 100 ms. */
  readonly intervalMs?: number;
  /** Ends the wait before the next poll once aborted, rejecting with the signal's reason. */
  readonly signal?: AbortSignal;
}

type Answer<T> = T | undefined | null | false;

/** Polls `fn` until it answers (see the module comment); `what` names the wait in the timeout error. */
export async function eventually<T>(
  what: string,
  fn: () => Promise<Answer<T>> | Answer<T>,
  options: EventuallyOptions & { readonly check?: () => void } = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    options.check?.();
    options.signal?.throwIfAborted();
    try {
      const answer = await fn();
      if (answer !== undefined && answer !== null && answer !== false) return answer;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (performance.now() >= deadline) {
      const why = last === undefined ? '' : `: ${last instanceof Error ? last.message : String(last)}`;
      throw new TestingError('EventuallyTimeout', `${what}: not within ${timeoutMs / 1000} s${why}`, { cause: last });
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100));
  }
}

/** What `startTestManager` needs of a cluster: `@opkit/testenv`'s `Environment` has both. */
export interface TestCluster {
  /** An admin kubeconfig. */
  readonly kubeconfigPath: string;
  /** A kubeconfig that authenticates as the ServiceAccount (created if missing). */
  kubeconfigFor(sa: { readonly namespace?: string; readonly name: string }): Promise<{ readonly path: string }>;
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
  /** The ServiceAccount's namespace (default `default`). */
  readonly namespace?: string;
  /** The manager's logger (default: silent; Forbidden answers are noticed either way). */
  readonly log?: Logger;
}

/** A running test manager; `await using` stops it as `stop()` does. */
export interface TestManager extends AsyncDisposable {
  /** The manager, running as the ServiceAccount, with metrics and health servers off. */
  readonly manager: Manager;
  /** An admin client for the test's own reads and writes (closed by `stop`). */
  readonly client: Client;
  /** `eventually` that fails at once when the manager was refused or failed. */
  eventually<T>(what: string, fn: () => Promise<Answer<T>> | Answer<T>, options?: EventuallyOptions): Promise<T>;
  /**
   * Stops the manager and closes both clients — all of it, whatever fails on the way — then rejects when the manager
   * was refused (`TestManagerForbidden`), failed (`ManagerFailed`) or a step of the stop failed
   * (`TestManagerStopFailed`); `cause` is the error, or an `AggregateError` of several.
   */
  stop(): Promise<void>;
}

/** Starts a manager for one test (see the module comment). */
export async function startTestManager(cluster: TestCluster, options: TestManagerOptions): Promise<TestManager> {
  const namespace = options.namespace ?? 'default';
  const admin = new Client(await loadConfig({ path: cluster.kubeconfigPath }), { name: `${options.name}-test` });
  let operatorClient: Client;
  try {
    await install(admin, options, namespace);
    const sa = await cluster.kubeconfigFor({ namespace, name: options.name });
    operatorClient = new Client(await loadConfig({ path: sa.path }), { name: options.name });
  } catch (err) {
    admin.close();
    throw err;
  }
  let refused: string | undefined;
  const log = noticing(options.log ?? silentLogger, (fields, message) => {
    refused ??= `${message}: ${String(fields.err ?? '')}`;
  });
  const manager = new Manager({
    name: options.name,
    client: operatorClient,
    log,
    metrics: { bindAddress: '0' },
    health: { bindAddress: '0' },
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
  return running(manager, admin, [operatorClient, admin], forbidden);
}

/** Installs the kinds' CRDs (waiting until each is served), then the ServiceAccount and its RBAC. */
async function install(admin: Client, options: TestManagerOptions, namespace: string): Promise<void> {
  const applier = new Applier(admin, 'opkit-test');
  const kinds = options.kinds ?? [];
  if (kinds.length > 0) {
    await applier.applyAll(kinds.map((k) => k.crd() as KubeObject));
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

/** Starts `manager` and answers the running test manager: its checked `eventually` and its `stop`. */
function running(
  manager: Manager,
  admin: Client,
  clients: readonly Client[],
  forbidden: () => TestingError | undefined,
): TestManager {
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
    stopped ??= stopEverything(stop, run, clients);
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
  return {
    manager,
    client: admin,
    eventually: (what, fn, o = {}) => eventually(what, fn, { ...o, check }),
    stop: stopAll,
    [Symbol.asyncDispose]: stopAll,
  };
}

/** Stops the manager, waits for it, then closes every client: every step runs, and what failed is answered. */
async function stopEverything(stop: AbortController, run: Promise<void>, clients: readonly Client[]) {
  const problems: unknown[] = [];
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
