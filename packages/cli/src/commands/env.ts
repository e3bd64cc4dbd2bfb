/**
 * @module commands/env
 * `opkit env up | status | down | fetch | mirror`: a persistent local cluster for development, owned by a background
 * process (see env/daemon.ts). `up` finds, downloads or builds the binaries in the foreground (showing progress), starts the daemon,
 * waits until the cluster is ready and prints `export KUBECONFIG=…`. `up` on a running cluster only prints that line.
 * `up` runs under a lock per cluster name: a second `up` of the same cluster waits for the first and reports the
 * cluster it started (or waits for a daemon that is still starting); only one daemon ever owns a state directory.
 * `fetch` (alias `build`) only provides the binaries; `mirror DIR` writes them in the layout OPKIT_DOWNLOAD_MIRROR serves.
 *
 * `status --name NAME` reports that cluster; `status` alone reports every cluster that has a state directory, each
 * with its state and the live `opkit run`s that use it (env/runs.ts). `down` refuses, before it stops anything, a
 * cluster that a live `opkit run` uses, naming each run (pid, project directory, command) and what to do; `--force`
 * stops it anyway and names the runs. `up`, `down` and `status --name` without a name mean "default", and say which
 * other clusters run when "default" does not.
 */
import { spawn } from 'node:child_process';
import { mkdir, open, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  binaryCacheDir,
  KUBERNETES_VERSION,
  REQUIRED_COMPONENTS,
  readCacheManifest,
  releasePlatform,
  removeVolumeDirs,
  resolveBinaries,
  withLock,
  writeMirror,
} from '@opkit/testenv';
import { describeRun, inUseRefusal, liveRuns, type RunRecord, runsUsing } from '../env/runs.ts';
import {
  type ClusterStatus,
  localClusters,
  paths,
  readJson,
  runningDaemon,
  stateDir,
  stateRoot,
} from '../env/state.ts';
import { CliError } from '../errors.ts';

export const ENV_HELP = `Usage: opkit env <command> [options]

A local Kubernetes cluster for development: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
fake nodes, running in the background on 127.0.0.1.

Commands:
  up          start the cluster (fetching the binaries first if needed) and print export KUBECONFIG=...
  status      show whether the cluster runs, its address, kubeconfig, processes and the opkit runs using it
              (without --name: every local cluster)
  down        stop the cluster and remove its files; refused while a live "opkit run" uses it (--force: stop anyway)
  fetch       download (or build) and locate the control-plane binaries only; "build" is an alias
  mirror DIR  write this machine's binaries and their checksum files into DIR, laid out for OPKIT_DOWNLOAD_MIRROR

Options:
  --name NAME     cluster name (default "default"); several clusters can run side by side, and
                  "opkit run --cluster NAME" runs an operator against one
  --force         for "down": stop the cluster even though live "opkit run"s use it
  --nodes N       kwok fake nodes for "up" (default 3)
  --feature-gates GATES
                  kube-apiserver feature gates for "up", e.g. ShardedListAndWatch=true (comma-separated
                  Name=true|false)
  --timeout SEC   how long "up" waits for readiness once the binaries exist (default 120)
  --from-source   build missing binaries from Go modules instead of downloading them (as OPKIT_TESTENV_SOURCE=go)
  -h, --help      show this help

Binaries come from OPKIT_TESTENV_BINARIES, KUBEBUILDER_ASSETS, the cache, a download of the official releases
verified against their published checksums (OPKIT_DOWNLOAD_MIRROR=<base> fetches https://HOST/PATH from
<base>/HOST/PATH; HTTPS_PROXY and NO_PROXY are honoured), or a build with Go.
`;

// The sibling module as this one is run: `.ts` from the sources, `.js` from the built package.
const DAEMON = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? '../env/daemon.ts' : '../env/daemon.js', import.meta.url),
);

interface EnvFlags {
  name: string;
  /** `--name` was given (else `name` is "default"). */
  named: boolean;
  /** `--force` (`down` only). */
  force: boolean;
  nodes: number;
  timeoutMs: number;
  /** `--feature-gates` (`up` only): the apiserver's, as given. */
  featureGates?: string;
  /** `go` with --from-source; otherwise OPKIT_TESTENV_SOURCE decides. */
  source?: 'go';
}

export async function envCommand(argv: readonly string[], out: (line: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      name: { type: 'string' },
      nodes: { type: 'string', default: '3' },
      timeout: { type: 'string', default: '120' },
      'feature-gates': { type: 'string' },
      'from-source': { type: 'boolean', default: false },
      force: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [sub, ...extra] = positionals;
  if (values.help || !sub) {
    out(ENV_HELP);
    return values.help ? 0 : 2;
  }
  const wanted = sub === 'mirror' ? 1 : 0;
  if (extra.length > wanted)
    throw new CliError('Usage', `unexpected argument "${extra[wanted]}"; see opkit env --help`);
  if (extra.length < wanted) {
    throw new CliError('Usage', 'env mirror needs the directory to write into: opkit env mirror DIR');
  }
  const nodes = Number(values.nodes);
  if (!Number.isInteger(nodes) || nodes < 0 || nodes > 1000) {
    throw new CliError('Usage', `--nodes must be a whole number from 0 to 1000, got "${values.nodes}"`);
  }
  const timeout = Number(values.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0) {
    throw new CliError('Usage', `--timeout must be a positive number of seconds, got "${values.timeout}"`);
  }
  const name = values.name ?? 'default';
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name)) {
    throw new CliError('Usage', `--name must be lower-case letters, digits and '-', got "${name}"`);
  }
  if (values.force && sub !== 'down') throw new CliError('Usage', '--force applies to opkit env down only');
  const gates = values['feature-gates'];
  if (gates !== undefined && sub !== 'up') throw new CliError('Usage', '--feature-gates applies to opkit env up only');
  if (gates !== undefined && !/^[A-Za-z0-9]+=(true|false)(,[A-Za-z0-9]+=(true|false))*$/.test(gates))
    throw new CliError(
      'Usage',
      `--feature-gates must be Name=true or Name=false, comma-separated (e.g. ShardedListAndWatch=true), got "${gates}"`,
    );
  const flags: EnvFlags = {
    name,
    named: values.name !== undefined,
    force: values.force,
    nodes,
    timeoutMs: timeout * 1000,
    ...(gates !== undefined ? { featureGates: gates } : {}),
    ...(values['from-source'] ? { source: 'go' as const } : {}),
  };
  switch (sub) {
    case 'up':
      return up(flags, out);
    case 'status':
      return flags.named ? status(flags.name, out) : statusOfAll(out);
    case 'down':
      return down(flags, out);
    case 'fetch':
    case 'build':
      return fetchBinaries(flags, out);
    case 'mirror':
      return mirror(flags, extra[0] as string, out);
    default:
      throw new CliError('Usage', `unknown command "env ${sub}"; the commands are up, status, down, fetch, mirror`);
  }
}

/** The longest a first build of the binaries may take, which a second `up` may have to wait for. */
const BUILD_WAIT_MS = 90 * 60_000;

async function up(flags: EnvFlags, out: (line: string) => void): Promise<number> {
  const dir = stateDir(flags.name);
  await mkdir(dirname(dir), { recursive: true });
  return withLock(
    `${dir}.lock`,
    {
      timeoutMs: BUILD_WAIT_MS + flags.timeoutMs,
      onWait: (pid) =>
        out(`opkit: another "opkit env up" (pid ${pid}) is starting cluster "${flags.name}"; waiting for it`),
    },
    () => upLocked(flags, out),
  );
}

async function upLocked(flags: EnvFlags, out: (line: string) => void): Promise<number> {
  const dir = stateDir(flags.name);
  const files = paths(dir);
  if (await runningDaemon(dir)) {
    const st = await readJson<ClusterStatus>(files.status);
    if (st?.phase === 'ready') {
      out(`opkit: cluster "${flags.name}" is already running at ${st.server}`);
      if (flags.featureGates !== undefined)
        out(`opkit: it keeps the feature gates it started with; for ${flags.featureGates}: opkit env down, then up`);
      out(`export KUBECONFIG=${st.kubeconfigPath}`);
      return 0;
    }
    out(`opkit: cluster "${flags.name}" is starting (daemon of an earlier "opkit env up"); waiting for it`);
    return waitReady(flags, out);
  }
  // Foreground: find, download or build the binaries, so their progress is visible here.
  await resolveBinaries({ log: (line) => out(`opkit: ${line}`), ...(flags.source ? { source: flags.source } : {}) });
  await removeVolumeDirs(files.cluster); // its volumes' directories live under /tmp, outside the state dir
  await rm(dir, { recursive: true, force: true }); // a stale state dir of a dead daemon
  await mkdir(dir, { recursive: true });
  const log = await open(files.log, 'a');
  const child = spawn(process.execPath, [DAEMON, dir, String(flags.nodes), flags.featureGates ?? ''], {
    detached: true,
    stdio: ['ignore', log.fd, log.fd],
  });
  await log.close();
  child.unref();
  await writeFile(files.daemon, JSON.stringify({ pid: child.pid, startedAt: new Date().toISOString() }));
  out(`opkit: starting cluster "${flags.name}" (${flags.nodes} kwok nodes), log: ${files.log}`);
  return waitReady(flags, out);
}

/** Waits until the cluster's daemon reports ready (prints the export line), fails, exits, or the timeout passes. */
async function waitReady(flags: EnvFlags, out: (line: string) => void): Promise<number> {
  const dir = stateDir(flags.name);
  const files = paths(dir);
  const deadline = Date.now() + flags.timeoutMs;
  for (;;) {
    const st = await readJson<ClusterStatus>(files.status);
    if (st?.phase === 'ready') {
      out(
        `opkit: cluster "${flags.name}" is ready in ${st.readySeconds} s at ${st.server} (Kubernetes ${KUBERNETES_VERSION})`,
      );
      out(`export KUBECONFIG=${st.kubeconfigPath}`);
      return 0;
    }
    const alive = (await runningDaemon(dir)) !== undefined;
    if (st?.phase === 'failed' || !alive) {
      const tail = (await readFile(files.log, 'utf8').catch(() => '')).trimEnd().split('\n').slice(-15).join('\n');
      throw new CliError(
        'ClusterFailed',
        `cluster "${flags.name}" failed to start: ${st?.error ?? 'the daemon exited'}\n${tail}`,
      );
    }
    if (Date.now() > deadline) {
      throw new CliError(
        'Timeout',
        `cluster "${flags.name}" was not ready within ${flags.timeoutMs / 1000} s; see ${files.log}, then opkit env down`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** `--name NAME` as a command needs it: nothing for "default". */
const nameFlag = (name: string) => (name === 'default' ? '' : ` --name ${name}`);

/** `; running: "a" (opkit env down --name a)`: the other clusters that run, when `name` does not (empty otherwise). */
async function othersRunning(name: string, command: 'up' | 'down'): Promise<string> {
  const others = (await localClusters()).filter((c) => c.running && c.name !== name);
  if (others.length === 0) return '';
  const hint = (n: string) => (command === 'down' ? ` (opkit env down${nameFlag(n)})` : '');
  return `; running: ${others.map((c) => `"${c.name}"${hint(c.name)}`).join(', ')}`;
}

/** The live runs of this machine that use cluster `name` (whose apiserver is `server`, when known). */
async function runsOf(name: string, server: string | undefined): Promise<RunRecord[]> {
  return runsUsing(await liveRuns(stateRoot()), name, server);
}

/**
 * `opkit env status --name NAME`: exit 0 ready, 1 starting or failed, 3 not running (then naming the clusters that
 * run, unless `listing`).
 */
async function status(name: string, out: (line: string) => void, listing = false): Promise<number> {
  const dir = stateDir(name);
  const pid = await runningDaemon(dir);
  const st = await readJson<ClusterStatus>(paths(dir).status);
  if (!pid || !st) {
    const others = listing ? '' : await othersRunning(name, 'up');
    out(`cluster "${name}": not running (start it with: npx opkit env up${nameFlag(name)})${others}`);
    return 3;
  }
  out(`cluster "${name}": ${st.phase}${st.phase === 'ready' ? ` at ${st.server}` : ''}`);
  if (st.error) out(`  error: ${st.error}`);
  out(`  daemon pid: ${pid}, log: ${paths(dir).log}`);
  if (st.kubeconfigPath) out(`  export KUBECONFIG=${st.kubeconfigPath}`);
  if (st.nodes !== undefined) out(`  kwok nodes: ${st.nodes}`);
  for (const [component, p] of Object.entries(st.pids ?? {})) out(`  ${component}: pid ${p}`);
  for (const run of await runsOf(name, st.server)) out(`  used by opkit run ${describeRun(run)}`);
  return st.phase === 'ready' ? 0 : 1;
}

/**
 * `opkit env status`: every cluster with a state directory, as `status --name` reports it. Exit 0 when one is ready,
 * 3 when none runs (or there is none), 1 otherwise.
 */
async function statusOfAll(out: (line: string) => void): Promise<number> {
  const clusters = await localClusters();
  if (clusters.length === 0) {
    out('no local clusters (start one with: npx opkit env up [--name NAME])');
    return 3;
  }
  const codes: number[] = [];
  for (const c of clusters) codes.push(await status(c.name, out, true));
  if (codes.includes(0)) return 0;
  return codes.every((c) => c === 3) ? 3 : 1;
}

/** `down` waits for an `up` under way (the same per-cluster lock), so it never removes the state of a starting daemon. */
async function down(flags: EnvFlags, out: (line: string) => void): Promise<number> {
  const dir = stateDir(flags.name);
  await mkdir(dirname(dir), { recursive: true });
  return withLock(
    `${dir}.lock`,
    {
      timeoutMs: BUILD_WAIT_MS + flags.timeoutMs,
      onWait: (pid) => out(`opkit: an "opkit env up" (pid ${pid}) is starting cluster "${flags.name}"; waiting for it`),
    },
    () => downLocked(flags, out),
  );
}

async function downLocked(flags: EnvFlags, out: (line: string) => void): Promise<number> {
  const dir = stateDir(flags.name);
  const pid = await runningDaemon(dir);
  if (pid) {
    const users = await runsOf(flags.name, (await readJson<ClusterStatus>(paths(dir).status))?.server);
    if (users.length > 0 && !flags.force) throw new CliError('ClusterInUse', inUseRefusal(flags.name, users));
    if (users.length > 0) {
      const who = users.length > 1 ? `${users.length} live opkit runs use it` : 'a live opkit run uses it';
      out(`opkit: stopping cluster "${flags.name}" although ${who} (--force): ${users.map(describeRun).join('; ')}`);
    }
    process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + 60_000;
    while ((await runningDaemon(dir)) !== undefined) {
      if (Date.now() > deadline) {
        process.kill(pid, 'SIGKILL');
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    out(`opkit: cluster "${flags.name}" stopped`);
  } else {
    out(`opkit: cluster "${flags.name}" is not running${flags.named ? '' : await othersRunning(flags.name, 'down')}`);
  }
  await removeVolumeDirs(paths(dir).cluster); // what a killed daemon and its watchdog left under /tmp
  await rm(dir, { recursive: true, force: true });
  return 0;
}

async function fetchBinaries(flags: EnvFlags, out: (line: string) => void): Promise<number> {
  const paths = await resolveBinaries({
    log: (line) => out(`opkit: ${line}`),
    ...(flags.source ? { source: flags.source } : {}),
  });
  for (const name of [...REQUIRED_COMPONENTS, 'kubectl' as const]) {
    const p = paths[name];
    if (p) out(`${name.padEnd(24)} ${p}`);
  }
  const manifest = await readCacheManifest();
  if (manifest) {
    const sources = Object.values(manifest.sources ?? {});
    const built = sources.filter((s) => s === 'go').length;
    const downloaded = sources.length - built;
    const how = [
      downloaded > 0 ? `${downloaded} downloaded and verified` : '',
      built > 0 || sources.length === 0 ? `built with ${manifest.goVersion ?? 'Go'}` : '',
    ]
      .filter(Boolean)
      .join(', ');
    out(`cache: ${binaryCacheDir()} (${how}; written ${manifest.builtAt} in ${manifest.buildSeconds} s)`);
    if (flags.source === 'go' && downloaded > 0) {
      out(
        `opkit: the cache already holds downloaded binaries; delete ${binaryCacheDir()} to build them all from source`,
      );
    }
  }
  return 0;
}

async function mirror(flags: EnvFlags, dir: string, out: (line: string) => void): Promise<number> {
  const platform = releasePlatform();
  if (!platform) {
    throw new CliError(
      'Usage',
      `official release binaries exist for linux amd64 and arm64 only; this machine is ${process.platform}/${process.arch}, so there is no layout to mirror`,
    );
  }
  const paths = await resolveBinaries({
    log: (line) => out(`opkit: ${line}`),
    ...(flags.source ? { source: flags.source } : {}),
  });
  const target = resolve(dir);
  const entries = await writeMirror(target, paths, platform);
  for (const e of entries) out(`${e.component.padEnd(24)} ${e.path}  sha256 ${e.sha256}`);
  out(
    `opkit: wrote ${entries.length} binaries into ${target}, with their digests where upstream publishes them (checksum files, GitHub's release answers)`,
  );
  out('opkit: serve that directory over HTTP(S) and set OPKIT_DOWNLOAD_MIRROR to its URL on the machines that use it');
  return 0;
}
