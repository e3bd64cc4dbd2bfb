/**
 * @module peers
 * The systems the comparison benchmarks run side by side, each started as its own process authenticated as the same
 * ServiceAccount under the same RBAC, with the same worker count and no client-side rate limit:
 * - `opkit`: operators/appservice (this repository) as its image runs it: bundled (`opkit build --js`, made afresh
 *   once per benchmark process), with the environment of its generated Deployment (NODE_OPTIONS, malloc tuning) and
 *   a warm Node compile cache;
 * - `go`: the same operator written with Go controller-runtime (bench/peers/go-controller-runtime), built here from Go
 *   modules with the local Go the first time (cached in the user cache);
 * - `clientNode`: the same operator written with @kubernetes/client-node's informers (bench/peers/client-node), with
 *   a warm compile cache too;
 * - `kfc`: the same operator written with kubernetes-fluent-client (Pepr's client: its `Watch` and server-side apply,
 *   bench/peers/kfc), with a warm compile cache too.
 * The floor (the minimum writes, at full concurrency) runs in the benchmark process itself: see floor.ts.
 */
import { type ChildProcess, type SpawnOptions, spawn, spawnSync } from 'node:child_process';
import { mkdir, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installObjects } from '@opkit/appservice';
import { cacheRoot, findGo } from '@opkit/testenv';

export type PeerName = 'opkit' | 'go' | 'kfc' | 'clientNode';
export const PEERS: readonly PeerName[] = ['opkit', 'go', 'kfc', 'clientNode'];

const OPKIT_DIR = fileURLToPath(new URL('../', import.meta.resolve('@opkit/appservice')));
/** What the operator's image runs: its bundle (`opkit build --js`, as the Dockerfile's build stage makes it). */
const OPKIT_BUNDLE = join(OPKIT_DIR, 'dist', 'operator', 'main.mjs');
const CLI_MAIN = fileURLToPath(new URL('./main.ts', import.meta.resolve('@opkit/cli')));
const CLIENT_NODE = fileURLToPath(new URL('../peers/client-node/operator.ts', import.meta.url));
const KFC = fileURLToPath(new URL('../peers/kfc/operator.ts', import.meta.url));
const GO_DIR = fileURLToPath(new URL('../peers/go-controller-runtime/', import.meta.url));

/** Builds (once) and returns the Go peer's binary. */
export function goPeerBinary(log: (line: string) => void): Promise<string> {
  return goBinary(GO_DIR, 'appservice-go', log);
}

/** Builds (once, again when main.go or go.sum change) the Go program in `dir` into the user cache as `name`. */
export async function goBinary(dir: string, name: string, log: (line: string) => void): Promise<string> {
  const out = join(cacheRoot(), 'bench', name);
  const fresh = await stat(out).then(
    async (s) =>
      s.mtimeMs > (await stat(join(dir, 'main.go'))).mtimeMs && s.mtimeMs > (await stat(join(dir, 'go.sum'))).mtimeMs,
    () => false,
  );
  if (fresh) return out;
  const go = await findGo();
  if (!go) throw new Error(`${name} needs Go ≥ 1.26 to build (see docs/testenv.md for where opkit looks for it)`);
  await mkdir(join(cacheRoot(), 'bench'), { recursive: true });
  log(`building ${name} (first time only)…`);
  const t0 = performance.now();
  const partial = `${out}.partial-${process.pid}`;
  const code = await new Promise<number | null>((resolve) => {
    const p = spawn(go, ['build', '-trimpath', '-o', partial, '.'], {
      cwd: dir,
      env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod', CGO_ENABLED: '0' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    p.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`building ${name} failed (exit ${code})`);
  await rename(partial, out);
  log(`built ${name} in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  return out;
}

const COMPILE_CACHE = join(cacheRoot(), 'bench', 'node-compile-cache');
let warmed = false;

/**
 * Bundles the AppService operator, and fills the Node compile cache for the Node peers, as the operator image does at
 * build time: each is loaded once (opkit's bundle with --help; client-node and kfc with no cluster, so they exit after
 * loading).
 */
export function warmCompileCache(): void {
  if (warmed) return;
  warmed = true;
  const env = { ...process.env, NODE_COMPILE_CACHE: COMPILE_CACHE };
  const bundled = spawnSync(process.execPath, [CLI_MAIN, 'build', '--js', '--dir', OPKIT_DIR], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (bundled.status !== 0) throw new Error(`bundling the AppService operator failed: ${bundled.stderr}`);
  spawnSync(process.execPath, [OPKIT_BUNDLE, '--help'], { env, stdio: 'ignore', timeout: 60_000 });
  for (const peer of [CLIENT_NODE, KFC])
    spawnSync(process.execPath, [peer, '--kubeconfig', '/nonexistent'], { env, stdio: 'ignore', timeout: 60_000 });
}

/**
 * The literal environment of the operator's generated Deployment (NODE_OPTIONS, malloc tuning; not the downward-API
 * values), so the benchmark runs it as it is shipped.
 */
async function deployedEnv(): Promise<Record<string, string>> {
  const deployment = (await installObjects()).find((o) => o.kind === 'Deployment') as
    | { spec?: { template?: { spec?: { containers?: { env?: { name: string; value?: string }[] }[] } } } }
    | undefined;
  const env: Record<string, string> = {};
  for (const e of deployment?.spec?.template?.spec?.containers?.[0]?.env ?? [])
    if (e.value !== undefined) env[e.name] = e.value;
  return env;
}

const HOPS = fileURLToPath(new URL('./children/hops.ts', import.meta.url));
let diagnosed = 0;

/**
 * Diagnosis of the opkit process, asked for by environment: BENCH_HOPS=DIR (per-change hops, GC pauses and
 * event-loop delay, see children/hops.ts; written when the process gets SIGUSR2), BENCH_CPU_PROF=DIR (`--cpu-prof`),
 * BENCH_NODE_OPTIONS=FLAGS (in place of the Deployment's NODE_OPTIONS, to weigh V8 flags).
 * Files per process in DIR.
 */
function diagnosis(): { args: string[]; env: Record<string, string> } {
  const args: string[] = [];
  const env: Record<string, string> = {};
  if (process.env.BENCH_HOPS) {
    args.push('--import', HOPS);
    env.OPKIT_HOPS_FILE = join(process.env.BENCH_HOPS, `hops-${process.pid}-${++diagnosed}`);
  }
  if (process.env.BENCH_CPU_PROF) args.push('--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF);
  // to try other V8 flags than the Deployment's (its NODE_OPTIONS replaced)
  if (process.env.BENCH_NODE_OPTIONS !== undefined) env.NODE_OPTIONS = process.env.BENCH_NODE_OPTIONS;
  return { args, env };
}

/**
 * What a run may add to opkit's process: where it serves /metrics (plain HTTP, on loopback) and /healthz + /readyz
 * (both off by default), more flags, more environment (over the Deployment's). The other peers take none of it.
 */
export interface OpkitExtras {
  readonly metricsPort?: number;
  readonly healthPort?: number;
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /**
   * A cgroup's `cgroup.procs` file (any system): the process joins it before it starts, as a container's process
   * starts in its cgroup, so every page it touches is charged there.
   */
  readonly cgroupProcs?: string;
}

/** `spawn(file, args, options)`, through a shell that first moves itself into `cgroupProcs` (then execs `file`). */
function spawnIn(
  cgroupProcs: string | undefined,
  file: string,
  args: readonly string[],
  options: SpawnOptions,
): ChildProcess {
  if (cgroupProcs === undefined) return spawn(file, args, options);
  return spawn('/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', cgroupProcs, file, ...args], options);
}

export async function startPeer(
  name: PeerName,
  kubeconfig: string,
  workers: number,
  goBinary?: string,
  extras: OpkitExtras = {},
): Promise<ChildProcess> {
  const common = ['--kubeconfig', kubeconfig, '--max-concurrent-reconciles', String(workers)];
  const stdio: ['ignore', 'ignore', 'inherit'] = ['ignore', 'ignore', 'inherit'];
  if (name !== 'go') warmCompileCache();
  const env = { ...process.env, NODE_COMPILE_CACHE: COMPILE_CACHE };
  switch (name) {
    case 'opkit': {
      const diag = diagnosis();
      return spawnIn(
        extras.cgroupProcs,
        process.execPath,
        [
          // for the diagnosis' preloaded recorder, a workspace source (the Deployment's NODE_OPTIONS below replace the
          // environment's); the bundle itself resolved its packages when it was built
          '--conditions=@opkit/source',
          ...diag.args,
          OPKIT_BUNDLE,
          ...common,
          ...endpointArgs(extras),
          '--log-level',
          'warn',
          ...(extras.args ?? []),
        ],
        // the bench's harness serves the webhooks in its own process (installApiAndRbac)
        {
          stdio,
          env: { ...env, ...(await deployedEnv()), ...diag.env, ENABLE_WEBHOOKS: 'false', ...extras.env },
        },
      );
    }
    case 'clientNode':
      return spawn(process.execPath, [CLIENT_NODE, ...common], { stdio, env });
    case 'kfc':
      return spawn(process.execPath, [KFC, ...common], { stdio, env });
    case 'go':
      if (!goBinary) throw new Error('the Go peer binary is missing');
      return spawnIn(extras.cgroupProcs, goBinary, [...common, '--zap-log-level', 'error'], { stdio });
  }
}

/** opkit's /metrics and health flags: off, or plain HTTP on the loopback ports asked for. */
function endpointArgs(extras: OpkitExtras): string[] {
  const metrics =
    extras.metricsPort === undefined
      ? ['--metrics-bind-address', '0']
      : ['--metrics-bind-address', `127.0.0.1:${extras.metricsPort}`, '--metrics-secure=false'];
  const health = extras.healthPort === undefined ? '0' : `127.0.0.1:${extras.healthPort}`;
  return [...metrics, '--health-probe-bind-address', health];
}
