/**
 * @module env/runs
 * The `opkit run`s of this machine, as each records itself in `<state>/runs/<pid>.json` (the state directory of
 * `opkit env`, env/state.ts): its pid and the start time of that process, when it started, its project directory
 * and command, the ports it chose for its operator (commands/run-reservations.ts), and the cluster it uses once it
 * has chosen one (a local cluster's name, and the apiserver's URL).
 *
 * Guarantees:
 * - A record is written whole (a private file renamed into place): a reader never sees half of one.
 * - A run is live while its pid runs (not a zombie) and, where /proc tells, is the same process that wrote the
 *   record (same start time): a record left by a run killed with SIGKILL, whose pid was since reused, is not taken
 *   for a live run.
 * - `runsUsing` finds the runs that use a local cluster by its name or its apiserver's URL, so a run that reached
 *   it through `--kubeconfig` or `KUBECONFIG` counts too.
 * Caveats: only runs sharing the state directory are seen; runs on other machines, or started by another user, are
 * not. Writers serialise through `withRunsLock`; a reader that only reads takes no lock and may miss a run that is
 * recording itself at that moment.
 */
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isProcessAlive, withLock } from '@opkit/testenv';
import { readJson } from './state.ts';

/** The cluster a run uses: the local cluster's name when it is one, and the apiserver's URL. */
export interface RunCluster {
  readonly name?: string;
  readonly server: string;
}

/** One run, as it recorded itself. Records of older opkit versions lack the optional fields. */
export interface RunRecord {
  readonly pid: number;
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat), where the system tells. */
  readonly startTicks?: number;
  /** When it recorded itself (RFC 3339). */
  readonly started: string;
  /** The project directory. */
  readonly dir?: string;
  /** The command as typed, e.g. `opkit run --cluster dev`. */
  readonly command?: string;
  readonly ports: readonly number[];
  readonly cluster?: RunCluster;
}

export const runsDir = (root: string) => join(root, 'runs');
const recordFile = (root: string, pid: number) => join(runsDir(root), `${pid}.json`);

/** The start time of `pid` in clock ticks since boot, from /proc; undefined where there is no /proc, or it ended. */
export async function processStartTicks(pid: number): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const field = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]; // field 22; the fields after `comm` start at 3
  return field ? Number(field) : undefined;
}

/** Whether `record` is of a live run: its pid runs and is the same process (see the module's guarantees). */
export async function isLive(record: RunRecord, alive: (pid: number) => boolean = isProcessAlive): Promise<boolean> {
  if (!alive(record.pid)) return false;
  if (record.startTicks === undefined) return true;
  const now = await processStartTicks(record.pid);
  return now === undefined || now === record.startTicks;
}

/**
 * The records of the runs that are live, but `except`'s, sorted by pid. With `prune` (only under `withRunsLock`),
 * the records of ended runs are removed on the way.
 */
export async function liveRuns(
  root: string,
  options: { readonly except?: number; readonly prune?: boolean; readonly alive?: (pid: number) => boolean } = {},
): Promise<RunRecord[]> {
  const files = await readdir(runsDir(root)).catch(() => [] as string[]);
  const out: RunRecord[] = [];
  for (const file of files.filter((f) => f.endsWith('.json'))) {
    const record = await readJson<RunRecord>(join(runsDir(root), file));
    if (record && record.pid === options.except) continue;
    if (record && (await isLive(record, options.alive))) out.push(record);
    else if (options.prune) await rm(join(runsDir(root), file), { force: true });
  }
  return out.sort((a, b) => a.pid - b.pid);
}

/** Writes `record` whole: a private file renamed over the run's record. */
export async function writeRun(root: string, record: RunRecord): Promise<void> {
  const file = recordFile(root, record.pid);
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(record)}\n`);
  await rename(temporary, file);
}

/** Removes the record of run `pid` (idempotent). */
export const removeRun = (root: string, pid: number) => rm(recordFile(root, pid), { force: true });

/** Runs `task` holding the lock every writer of the records takes (`<state>/runs.lock`). */
export function withRunsLock<T>(root: string, task: () => Promise<T>): Promise<T> {
  return withLock(join(root, 'runs.lock'), { timeoutMs: 30_000, pollMs: 25 }, task);
}

/** The runs of `runs` that use the local cluster `name`, whose apiserver is `server` when it runs. */
export function runsUsing(runs: readonly RunRecord[], name: string, server: string | undefined): RunRecord[] {
  return runs.filter((r) => r.cluster && (r.cluster.name === name || (server && r.cluster.server === server)));
}

/** `pid 123 in /home/me/op (opkit run --cluster dev)`: the run as its user would recognise it. */
export function describeRun(r: RunRecord): string {
  const where = r.dir ? ` in ${r.dir}` : '';
  return `pid ${r.pid}${where} (${r.command ?? `opkit run, started ${r.started}`})`;
}

/** The command line `opkit run ARGS…` as a shell would take it back: arguments quoted where they need it. */
export function runCommandLine(args: readonly string[]): string {
  const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`);
  return ['opkit', 'run', ...args].map(quote).join(' ');
}

/**
 * Why `opkit env down --name NAME` does not stop the cluster: the live runs that use it, and how to proceed (stop
 * them, or `--force`).
 */
export function inUseRefusal(name: string, runs: readonly RunRecord[]): string {
  const several = runs.length > 1;
  const flag = name === 'default' ? '' : ` --name ${name}`;
  return (
    `cluster "${name}" is in use by ${several ? `${runs.length} live opkit runs` : 'a live opkit run'}: ` +
    `${runs.map(describeRun).join('; ')}; stop ${several ? 'them' : 'it'} first (Ctrl-C where ${several ? 'they run' : 'it runs'}, ` +
    `or kill ${runs.map((r) => r.pid).join(' ')}), or stop the cluster anyway with: opkit env down${flag} --force`
  );
}
