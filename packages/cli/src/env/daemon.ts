/**
 * @module env/daemon
 * The background process behind `opkit env up`: starts a testenv control plane in `<stateDir>/cluster`, records its
 * progress in `status.json`, and stops it cleanly on SIGTERM or SIGINT (`opkit env down`). If this process is killed,
 * testenv's watchdog ends the components. Run as: `node daemon.ts <stateDir> <nodes> [<apiserver feature gates>]`.
 */
import { writeFile } from 'node:fs/promises';
import { type Environment, start } from '@opkit/testenv';
import { type ClusterStatus, paths } from './state.ts';

const [dir, nodesArg, featureGates] = process.argv.slice(2);
if (!dir) {
  process.stderr.write('usage: daemon.ts <stateDir> <nodes> [<feature gates>]\n');
  process.exit(2);
}
const files = paths(dir);
const log = (line: string) => process.stdout.write(`${new Date().toISOString()} ${line}\n`);
const writeStatus = (status: ClusterStatus) => writeFile(files.status, `${JSON.stringify(status, null, 2)}\n`);

let env: Environment | undefined;
let stopping = false;
const shutdown = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  log(`${signal}: stopping the cluster`);
  await env?.stop();
  log('stopped');
  process.exit(0);
};
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

await writeStatus({ phase: 'starting' });
const t0 = performance.now();
try {
  const apiserverArgs = featureGates ? [`--feature-gates=${featureGates}`] : [];
  env = await start({ dir: files.cluster, nodes: Number(nodesArg ?? '3'), apiserverArgs, log });
  await writeStatus({
    phase: 'ready',
    server: env.server,
    kubeconfigPath: env.kubeconfigPath,
    nodes: env.nodes,
    pids: env.pids,
    readySeconds: Math.round((performance.now() - t0) / 100) / 10,
  });
} catch (err) {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err));
  await writeStatus({ phase: 'failed', error: err instanceof Error ? err.message : String(err) });
  process.exit(1);
}
setInterval(() => {}, 1 << 30); // stay up until signalled
