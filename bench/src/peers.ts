/**
 * @module peers
 * The systems the comparison benchmarks run side by side, each started as its own process authenticated as the same
 * ServiceAccount under the same RBAC, with the same worker count and no client-side rate limit:
 * - `opkit`: operators/appservice (this repository), with the NODE_OPTIONS of its generated Deployment;
 * - `go`: the same operator written with Go controller-runtime (bench/peers/go-controller-runtime), built here from Go
 *   modules with the local Go the first time (cached in the user cache);
 * - `clientNode`: the same operator written with @kubernetes/client-node's informers (bench/peers/client-node).
 * The floor (the minimum writes, at full concurrency) runs in the benchmark process itself: see floor.ts.
 * `heapMiB` raises the Node peers' old-space limit (the scale scenario caches more than the Deployment is sized for).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installObjects } from '@opkit/appservice';
import { cacheRoot, findGo } from '@opkit/testenv';

export type PeerName = 'opkit' | 'go' | 'clientNode';

const OPKIT_MAIN = fileURLToPath(new URL('./main.ts', import.meta.resolve('@opkit/appservice')));
const CLIENT_NODE = fileURLToPath(new URL('../peers/client-node/operator.ts', import.meta.url));
const GO_DIR = fileURLToPath(new URL('../peers/go-controller-runtime/', import.meta.url));

/** Builds (once) and returns the Go peer's binary. */
export async function goPeerBinary(log: (line: string) => void): Promise<string> {
  const out = join(cacheRoot(), 'bench', 'appservice-go');
  const fresh = await stat(out).then(
    async (s) =>
      s.mtimeMs > (await stat(join(GO_DIR, 'main.go'))).mtimeMs &&
      s.mtimeMs > (await stat(join(GO_DIR, 'go.sum'))).mtimeMs,
    () => false,
  );
  if (fresh) return out;
  const go = await findGo();
  if (!go) throw new Error('the Go peer needs Go ≥ 1.26 to build (see docs/testenv.md for where opkit looks for it)');
  await mkdir(join(cacheRoot(), 'bench'), { recursive: true });
  log('building the Go controller-runtime peer (first time only)…');
  const t0 = performance.now();
  const partial = `${out}.partial-${process.pid}`;
  const code = await new Promise<number | null>((resolve) => {
    const p = spawn(go, ['build', '-trimpath', '-o', partial, '.'], {
      cwd: GO_DIR,
      env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod', CGO_ENABLED: '0' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    p.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`building the Go peer failed (exit ${code})`);
  await rename(partial, out);
  log(`built the Go peer in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  return out;
}

/** The NODE_OPTIONS the operator's generated Deployment sets, so the benchmark runs it as it is shipped. */
async function deployedNodeOptions(): Promise<string> {
  const deployment = (await installObjects()).find((o) => o.kind === 'Deployment') as
    | { spec?: { template?: { spec?: { containers?: { env?: { name: string; value?: string }[] }[] } } } }
    | undefined;
  return deployment?.spec?.template?.spec?.containers?.[0]?.env?.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '';
}

export async function startPeer(
  name: PeerName,
  kubeconfig: string,
  workers: number,
  goBinary?: string,
  options: { heapMiB?: number } = {},
): Promise<ChildProcess> {
  const heap = options.heapMiB ? `--max-old-space-size=${options.heapMiB}` : '';
  const common = ['--kubeconfig', kubeconfig, '--max-concurrent-reconciles', String(workers)];
  const stdio: ['ignore', 'ignore', 'inherit'] = ['ignore', 'ignore', 'inherit'];
  switch (name) {
    case 'opkit':
      return spawn(
        process.execPath,
        [
          OPKIT_MAIN,
          ...common,
          '--metrics-bind-address',
          '0',
          '--health-probe-bind-address',
          '0',
          '--log-level',
          'warn',
        ],
        {
          stdio,
          env: {
            ...process.env,
            NODE_OPTIONS:
              `${(await deployedNodeOptions()).replace(/--max-old-space-size=\d+/, heap ? '' : '$&')} ${heap}`.trim(),
          },
        },
      );
    case 'clientNode':
      return spawn(process.execPath, [CLIENT_NODE, ...common], { stdio, env: { ...process.env, NODE_OPTIONS: heap } });
    case 'go':
      if (!goBinary) throw new Error('the Go peer binary is missing');
      return spawn(goBinary, [...common, '--zap-log-level', 'error'], { stdio });
  }
}
