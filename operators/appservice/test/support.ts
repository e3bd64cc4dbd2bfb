/**
 * @module test/support
 * End-to-end set-up: a control plane (with the audit log), the operator's API and RBAC installed from the generated
 * manifests, and the operator started as a separate process that authenticates as its own ServiceAccount.
 */

import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client, loadConfig } from '@opkit/runtime/client';
import { Namespaces, type Pod, Pods } from '@opkit/runtime/kinds';
import { type Environment, start, waitFor } from '@opkit/testenv';
import { type AppService, AppServices } from '../src/api/v1alpha1/appservice.ts';
import { LABELS } from '../src/controllers/pods.ts';
import { installApiAndRbac, NAME, NAMESPACE } from '../src/install.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

export interface Cluster {
  env: Environment;
  admin: Client;
  operatorKubeconfig: string;
}

export async function cluster(): Promise<Cluster> {
  const env = await start({ nodes: 3, podsPerNode: 500, auditLog: true, log: () => {} });
  const admin = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'e2e-admin' });
  await installApiAndRbac(admin);
  const sa = await env.kubeconfigFor({ namespace: NAMESPACE, name: NAME });
  return { env, admin, operatorKubeconfig: sa.path };
}

export interface OperatorProcess {
  readonly proc: ChildProcessWithoutNullStreams;
  readonly exit: Promise<number | null>;
  log: string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts the operator. Unless `env` says otherwise it runs with ENABLE_WEBHOOKS=false: the test process serves the
 * webhooks (installApiAndRbac's local mode).
 */
export function operator(c: Cluster, args: readonly string[] = [], env: NodeJS.ProcessEnv = {}): OperatorProcess {
  const proc = spawn(
    process.execPath,
    [
      MAIN,
      '--kubeconfig',
      c.operatorKubeconfig,
      '--metrics-bind-address',
      '0',
      '--health-probe-bind-address',
      '0',
      ...args,
    ],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ENABLE_WEBHOOKS: 'false', ...env } },
  );
  const p: OperatorProcess = {
    proc,
    exit: new Promise((resolve) => proc.once('exit', (code) => resolve(code))),
    log: '',
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return p.exit;
    },
  };
  const add = (c: string) => {
    p.log = (p.log + c).slice(-200_000);
  };
  proc.stdout.setEncoding('utf8').on('data', add);
  proc.stderr.setEncoding('utf8').on('data', add);
  return p;
}

export async function namespace(c: Cluster, name: string): Promise<void> {
  await c.admin.create(Namespaces, { metadata: { name } });
}

export async function createApp(
  c: Cluster,
  ns: string,
  name: string,
  spec: Partial<AppService['spec']>,
): Promise<AppService> {
  return c.admin.create(AppServices, {
    metadata: { name, namespace: ns },
    spec: { replicas: 1, image: 'busybox', ...spec },
  } as AppService);
}

/** Pods of an AppService that count (not terminating). */
export async function livePods(c: Cluster, ns: string, app: string): Promise<Pod[]> {
  const pods = (await c.admin.list(Pods, { namespace: ns, labelSelector: `${LABELS.instance}=${app}` })).items;
  return pods.filter((p) => !p.metadata.deletionTimestamp);
}

export { waitFor };

/** Waits until the AppService reports `replicas` ready pods for its current generation, and exactly that many pods run. */
export async function settled(
  c: Cluster,
  ns: string,
  name: string,
  replicas: number,
  image?: string,
): Promise<AppService> {
  return waitFor(
    `${ns}/${name} to settle at ${replicas}`,
    async () => {
      const app = await c.admin.get(AppServices, { namespace: ns, name });
      const s = app.status;
      if (s?.observedGeneration !== app.metadata.generation) return undefined;
      if (s?.replicas !== replicas || s.readyReplicas !== replicas || s.updatedReplicas !== replicas) return undefined;
      const pods = await livePods(c, ns, name);
      if (pods.length !== replicas) return undefined;
      if (image && pods.some((p) => p.spec?.containers[0]?.image !== image)) return undefined;
      return app;
    },
    60_000,
  );
}

export function kubectl(c: Cluster, args: string[]): { code: number | null; stdout: string; stderr: string } {
  const bin = c.env.binaries.kubectl ?? 'kubectl';
  const r = spawnSync(bin, ['--kubeconfig', c.env.kubeconfigPath, ...args], { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
