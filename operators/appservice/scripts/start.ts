/**
 * `npm start` (from the repository root): the AppService operator, end to end, on a real cluster.
 *
 * 1. The cluster: the current kubeconfig's when it answers, otherwise a local control plane started here.
 * 2. Installs the CRD and the operator's ServiceAccount and least-privilege RBAC (server-side apply).
 * 3. Runs the operator as its own ServiceAccount (not as admin), as a child process; its log goes to a file.
 * 4. Applies the sample (example-appservice, 3 replicas) and shows each AppService and its pods, live, until Ctrl-C;
 *    then stops what it started (the operator, and the local control plane if it started one).
 * `--exit-when-ready`: exit 0 as soon as the sample has converged (what the test suite runs).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, type ConnectionConfig, loadConfig } from '@opkit/runtime/client';
import { Pods } from '@opkit/runtime/kinds';
import { type Environment, start } from '@opkit/testenv';
import { AppServices } from '../src/api/v1alpha1/appservice.ts';
import { LABELS } from '../src/controllers/pods.ts';
import { applySample, installApiAndRbac, serviceAccountKubeconfig } from '../src/install.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const exitWhenReady = process.argv.includes('--exit-when-ready');
const out = (line: string) => process.stdout.write(`${line}\n`);

const work = await mkdtemp(join(tmpdir(), 'appservice-start-'));
let env: Environment | undefined;
let config: ConnectionConfig;
try {
  config = await loadConfig();
  const probe = new Client(config, { timeoutMs: 3_000 });
  await probe.transport.request({ method: 'GET', path: '/api' });
  probe.close();
  out(`opkit: using the current kubeconfig's cluster ${config.server} (context ${config.contextName})`);
} catch (err) {
  out(
    `opkit: no reachable cluster in the current kubeconfig (${(err as Error).message.split('\n')[0]}); starting a local control plane…`,
  );
  env = await start({ nodes: 3, log: (line) => out(`opkit: ${line}`) });
  config = await loadConfig({ path: env.kubeconfigPath });
  out(`opkit: local control plane ready; to use it from another shell: export KUBECONFIG=${env.kubeconfigPath}`);
}
const admin = new Client(config, { name: 'opkit-start' });
await installApiAndRbac(admin);
out('opkit: installed the AppService CRD and the operator’s ServiceAccount and RBAC (namespace appservice-system)');
const saKubeconfig = await serviceAccountKubeconfig(admin, config, join(work, 'operator.kubeconfig'));
const logFile = join(work, 'operator.log');
const { openSync } = await import('node:fs');
const logFd = openSync(logFile, 'a');
const operator = spawn(
  process.execPath,
  [
    MAIN,
    '--kubeconfig',
    saKubeconfig,
    '--metrics-bind-address',
    '127.0.0.1:0',
    '--health-probe-bind-address',
    '127.0.0.1:0',
    '--log-format',
    'pretty',
  ],
  // the webhooks are served by this script (installApiAndRbac), which stays alive beside the operator
  { stdio: ['ignore', logFd, logFd], env: { ...process.env, ENABLE_WEBHOOKS: 'false' } },
);
out(
  `opkit: the operator runs as system:serviceaccount:appservice-system:appservice-operator (pid ${operator.pid}); log: ${logFile}`,
);
await applySample(admin);
out('opkit: applied the sample AppService default/example-appservice (replicas: 3)');

let stopping = false;
const stop = async (code: number) => {
  if (stopping) return;
  stopping = true;
  clearInterval(timer);
  if (operator.exitCode === null) {
    operator.kill('SIGTERM');
    await new Promise((r) => operator.once('exit', r));
  }
  admin.close();
  if (env) {
    out('opkit: stopping the local control plane');
    await env.stop();
  }
  await rm(work, { recursive: true, force: true });
  process.exit(code);
};
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
operator.once('exit', (code) => {
  if (!stopping) {
    out(`opkit: the operator exited (${code}); see ${logFile}`);
    void stop(1);
  }
});

let last = '';
const tty = process.stdout.isTTY === true;
const timer = setInterval(() => void render(), 1_000);
async function render(): Promise<void> {
  try {
    const apps = (await admin.list(AppServices)).items;
    const lines = ['AppService                      DESIRED  CURRENT  READY  IMAGE', ...[]];
    let converged = apps.length > 0;
    for (const a of apps) {
      const s = a.status;
      lines.push(
        `${`${a.metadata.namespace}/${a.metadata.name}`.padEnd(32)}${String(a.spec.replicas ?? 1).padEnd(9)}${String(s?.replicas ?? 0).padEnd(9)}${String(s?.readyReplicas ?? 0).padEnd(7)}${a.spec.image ?? 'busybox'}`,
      );
      const pods = (
        await admin.list(Pods, {
          namespace: a.metadata.namespace ?? 'default',
          labelSelector: `${LABELS.instance}=${a.metadata.name}`,
        })
      ).items;
      for (const p of pods.sort((x, y) => ((x.metadata.name ?? '') < (y.metadata.name ?? '') ? -1 : 1))) {
        const ready = p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
        lines.push(
          `    ${(p.metadata.name ?? '').padEnd(36)}${p.metadata.deletionTimestamp ? 'Terminating' : (p.status?.phase ?? 'Pending')}${ready ? ', ready' : ''}${p.spec?.nodeName ? ` on ${p.spec.nodeName}` : ''}`,
        );
      }
      if ((s?.readyReplicas ?? 0) !== (a.spec.replicas ?? 1) || s?.observedGeneration !== a.metadata.generation)
        converged = false;
    }
    const screen = lines.join('\n');
    if (screen !== last) {
      if (tty) process.stdout.write('\x1b[2J\x1b[H');
      out(screen);
      if (tty) out('\n(Ctrl-C stops the operator; try: kubectl scale appservice/example-appservice --replicas=5)');
      last = screen;
    }
    if (exitWhenReady && converged) {
      out('opkit: the sample has converged');
      await stop(0);
    }
  } catch (err) {
    out(`opkit: ${(err as Error).message}`);
  }
}
