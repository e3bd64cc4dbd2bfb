/**
 * @module commands/run-reservations
 * The record of one `opkit run` (env/runs.ts): the ports it chose for its operator, so that two runs started at the
 * same moment never choose the same one (an operator binds its ports a second or two after its run chose them), and
 * the cluster it uses, so that `opkit env down` can tell a cluster is in use.
 *
 * `reservePorts` reads the records of the live runs, calls `choose` with their ports (each with the run that has
 * it), and records what it returns with the run's project directory and command, all under the lock of the records
 * (`<state>/runs.lock`), so choosing and recording are one step for every run of this machine; records of ended runs
 * are removed on the way. `useCluster` adds the cluster the run chose to its record; `release` removes the record.
 * Guarantee: two runs sharing a state directory never get a port the other has recorded. When the directory cannot
 * be created (a read-only home), the ports are chosen without the records and `unrecorded` says why; such a run is
 * not seen by `opkit env down` either.
 */
import { mkdir } from 'node:fs/promises';
import {
  liveRuns,
  processStartTicks,
  type RunCluster,
  type RunRecord,
  removeRun,
  runsDir,
  withRunsLock,
  writeRun,
} from '../env/runs.ts';
import { stateRoot } from '../env/state.ts';

/** A live run that has recorded a port: its pid and when it chose its ports (RFC 3339). */
export interface ReservingRun {
  readonly pid: number;
  readonly started: string;
}

export interface Reservation<T> {
  readonly value: T;
  /** Set when the state directory cannot be written: why; the ports were chosen without the other runs' records. */
  readonly unrecorded?: string;
  /** Adds the cluster the run uses to its record. */
  useCluster(cluster: RunCluster): Promise<void>;
  /** Removes this run's record (idempotent). */
  release(): Promise<void>;
}

export interface ReserveOptions {
  readonly root?: string;
  readonly pid?: number;
  /** Whether a pid runs (tests); a run is live when it runs and, where /proc tells, is the process that recorded it. */
  readonly alive?: (pid: number) => boolean;
  /** The run's project directory and command line, for the record. */
  readonly run?: { readonly dir: string; readonly command: string };
}

export async function reservePorts<T>(
  choose: (reserved: ReadonlyMap<number, ReservingRun>) => Promise<{ value: T; ports: readonly number[] }>,
  options: ReserveOptions = {},
): Promise<Reservation<T>> {
  const root = options.root ?? stateRoot();
  const pid = options.pid ?? process.pid;
  try {
    await mkdir(runsDir(root), { recursive: true });
  } catch (err) {
    // a read-only home (a container, say) must not stop a run: choose without the records, and say so
    const { value } = await choose(new Map());
    const reason = `${runsDir(root)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
    return { value, unrecorded: reason, useCluster: async () => {}, release: async () => {} };
  }
  const startTicks = await processStartTicks(pid);
  let record: RunRecord | undefined;
  const value = await withRunsLock(root, async () => {
    const reserved = new Map<number, ReservingRun>();
    for (const run of await liveRuns(root, {
      except: pid,
      prune: true,
      ...(options.alive ? { alive: options.alive } : {}),
    })) {
      for (const port of run.ports) reserved.set(port, { pid: run.pid, started: run.started });
    }
    const chosen = await choose(reserved);
    record = {
      pid,
      ...(startTicks !== undefined ? { startTicks } : {}),
      started: new Date().toISOString(),
      ...options.run,
      ports: chosen.ports,
    };
    await writeRun(root, record);
    return chosen.value;
  });
  return {
    value,
    useCluster: (cluster) =>
      withRunsLock(root, async () => {
        if (record) await writeRun(root, { ...record, cluster });
      }),
    release: () => removeRun(root, pid),
  };
}
