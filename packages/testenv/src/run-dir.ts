/**
 * @module run-dir
 * An environment's run directory (certificates, kubeconfigs, logs, etcd data) and what keeps it from outliving its
 * owner: `owner.json` (who owns it), `state.json` (what runs in it, for `opkit env status` and reaping), the watchdog
 * process, the `KEPT` marker, and `reapStale()`.
 *
 * Guarantees:
 * - `makeRunDir()` gives a fresh directory under the run root, or the one asked for when it is missing or empty (else
 *   `InvalidOption`); it never reuses a directory that holds anything.
 * - The watchdog (watchdog.ts) learns the pid of every component as it starts; when its owner dies without saying
 *   `done`, it ends those components and removes the directory — or marks it kept, when told `keep`.
 * - `reapStale()` ends the components of directories whose owner is gone (only pids whose command line names the
 *   directory, so a reused pid is never killed), removes the volume directories their clusters provisioned
 *   (volumes.ts) and removes those directories, except those marked kept.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultLog } from './binaries.ts';
import type { ComponentId } from './control-plane.ts';
import { TestenvError } from './errors.ts';
import { KEPT_MARKER, KEPT_TEXT, runRoot } from './paths.ts';
import { isProcessAlive } from './process.ts';
import { removeVolumeDirs } from './volumes.ts';

/** What `state.json` in the run directory records, for `opkit env status` and for reaping. */
export interface EnvironmentState {
  /** The process that started and owns the environment (see the module comment for what happens when it dies). */
  readonly ownerPid: number;
  /** The apiserver's URL, `https://127.0.0.1:<port>`. */
  readonly server: string;
  /** The admin kubeconfig. */
  readonly kubeconfigPath: string;
  /** pid of each running component. */
  readonly pids: Partial<Record<ComponentId, number>>;
  /** The loopback ports in use: `etcdClient`, `etcdPeer`, `apiserver`, `kcm`, `scheduler`, `kwok`. */
  readonly ports: Readonly<Record<string, number>>;
  /** Number of fake nodes. */
  readonly nodes: number;
  /** When the state was last written (ISO 8601): at start, and after each component restart, stop or start. */
  readonly startedAt: string;
}

// The sibling module as this one is run: `.ts` from the sources, `.js` from the built package.
const WATCHDOG = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? './watchdog.ts' : './watchdog.js', import.meta.url),
);

/** A fresh run directory under the run root, or `dir` when it is missing or empty (`InvalidOption` otherwise). */
export async function makeRunDir(dir: string | undefined): Promise<string> {
  if (!dir) {
    await mkdir(runRoot(), { recursive: true });
    return mkdtemp(join(runRoot(), 'env-'));
  }
  const existing = await readdir(dir).catch(() => undefined);
  if (existing && existing.length > 0) {
    throw new TestenvError(
      'InvalidOption',
      `the run directory ${dir} is not empty: choose another, or remove it yourself if it holds nothing you need`,
    );
  }
  await mkdir(dir, { recursive: true });
  return dir;
}

/** Records this process as the owner of the run directory (`owner.json`), before anything runs in it. */
export async function writeOwner(dir: string): Promise<void> {
  await writeFile(join(dir, 'owner.json'), JSON.stringify({ ownerPid: process.pid }));
}

/** Writes `state.json`. */
export async function writeState(dir: string, state: EnvironmentState): Promise<void> {
  await writeFile(join(dir, 'state.json'), `${JSON.stringify(state, null, 2)}\n`);
}

/** Reads `state.json`: undefined when it is missing or unreadable. */
export async function readState(dir: string): Promise<EnvironmentState | undefined> {
  return readFile(join(dir, 'state.json'), 'utf8')
    .then((t) => JSON.parse(t) as EnvironmentState)
    .catch(() => undefined);
}

/**
 * The end of a run directory after a clean stop: marked kept (a `KEPT` file) when `keep`, else removed. `beforeRemove`
 * runs between the two (the watchdog is told `done` once the marker is written and before the directory goes).
 */
export async function closeRunDir(dir: string, keep: boolean, beforeRemove: () => void): Promise<void> {
  if (keep) await writeFile(join(dir, KEPT_MARKER), KEPT_TEXT);
  beforeRemove();
  if (!keep) await rm(dir, { recursive: true, force: true });
}

/** The watchdog process of one run directory (see watchdog.ts); it never keeps the owner's process alive. */
export class Watchdog {
  readonly #child: ReturnType<typeof spawn>;

  /** Starts the watchdog of `dir`; with `keep`, it marks the directory kept instead of removing it. */
  constructor(dir: string, keep: boolean) {
    const child = spawn(process.execPath, [WATCHDOG, dir], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    child.unref();
    (child.stdin as unknown as Socket).unref();
    child.stdin?.on('error', () => {});
    if (keep) child.stdin?.write('keep\n');
    this.#child = child;
  }

  /** A component started as `pid`: the watchdog ends it if the owner dies. */
  spawned(pid: number): void {
    this.#child.stdin?.write(`pid ${pid}\n`);
  }

  /** The owner stopped cleanly: the watchdog exits without touching anything. */
  done(): void {
    this.#child.stdin?.end('done\n');
  }
}

/**
 * Ends the components of run directories whose owner process is gone (it was killed before it could stop them and
 * the watchdog could not act either), then removes those directories — except those marked kept (`keepDir`).
 */
export async function reapStale(log: (line: string) => void = defaultLog, root: string = runRoot()): Promise<void> {
  const entries = await readdir(root).catch(() => [] as string[]);
  for (const entry of entries) {
    const dir = join(root, entry);
    const owner = await readFile(join(dir, 'owner.json'), 'utf8')
      .then((t) => (JSON.parse(t) as { ownerPid: number }).ownerPid)
      .catch(() => undefined);
    if (owner === undefined || isProcessAlive(owner)) continue;
    const killed = await killOrphans(dir);
    const kept = await readFile(join(dir, KEPT_MARKER)).then(
      () => true,
      () => false,
    );
    if (kept) {
      if (killed > 0) {
        await removeVolumeDirs(dir);
        log(`ended ${killed} orphaned processes of the kept environment in ${dir}`);
      }
      continue;
    }
    await removeVolumeDirs(dir);
    await rm(dir, { recursive: true, force: true });
    log(`reaped a stale environment in ${dir}${killed > 0 ? ` (${killed} orphaned processes ended)` : ''}`);
  }
}

/** SIGKILLs each pid `state.json` of `dir` records whose command line still names `dir`; returns how many. */
async function killOrphans(dir: string): Promise<number> {
  const state = await readState(dir);
  let killed = 0;
  for (const pid of Object.values(state?.pids ?? {})) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(dir)) {
      process.kill(pid, 'SIGKILL');
      killed += 1;
    }
  }
  return killed;
}
