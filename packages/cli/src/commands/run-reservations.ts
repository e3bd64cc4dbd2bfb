/**
 * @module commands/run-reservations
 * The ports that the `opkit run`s of this machine have chosen for their operators, so that two runs started at the
 * same moment never choose the same one (an operator binds its ports a second or two after its run chose them).
 *
 * Each run records its ports in `<state>/runs/<pid>.json` (the state directory of `opkit env`: `OPKIT_STATE_DIR`,
 * else `$XDG_STATE_HOME/opkit`, else `~/.local/state/opkit`). `reservePorts` reads the records of the runs whose pid is
 * alive, calls `choose` with their ports (each with the run that has it), and records what it returns, all under one
 * lock file (`<state>/runs.lock`), so choosing and recording are one step for every run of this machine; records of
 * ended runs are removed on the way. `release` removes the run's record. A record left by a run killed with SIGKILL
 * names a pid that has ended (gone, or a zombie not yet reaped) and is ignored.
 * Guarantee: two runs sharing a state directory never get a port the other has recorded. When the directory cannot
 * be created (a read-only home), the ports are chosen without the records and `unrecorded` says why.
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isProcessAlive, withLock } from '@opkit/testenv';
import { readJson, stateRoot } from '../env/state.ts';

interface RunRecord {
  readonly pid: number;
  readonly started: string;
  readonly ports: readonly number[];
}

/** A live run that has recorded a port: its pid and when it chose its ports (RFC 3339). */
export interface ReservingRun {
  readonly pid: number;
  readonly started: string;
}

export interface Reservation<T> {
  readonly value: T;
  /** Set when the state directory cannot be written: why; the ports were chosen without the other runs' records. */
  readonly unrecorded?: string;
  /** Removes this run's record (idempotent). */
  release(): Promise<void>;
}

export async function reservePorts<T>(
  choose: (reserved: ReadonlyMap<number, ReservingRun>) => Promise<{ value: T; ports: readonly number[] }>,
  options: { readonly root?: string; readonly pid?: number; readonly alive?: (pid: number) => boolean } = {},
): Promise<Reservation<T>> {
  const root = options.root ?? stateRoot();
  const alive = options.alive ?? isProcessAlive;
  const pid = options.pid ?? process.pid;
  const dir = join(root, 'runs');
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    // a read-only home (a container, say) must not stop a run: choose without the records, and say so
    const { value } = await choose(new Map());
    const reason = `${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
    return { value, unrecorded: reason, release: async () => {} };
  }
  const mine = join(dir, `${pid}.json`);
  const value = await withLock(join(root, 'runs.lock'), { timeoutMs: 30_000, pollMs: 25 }, async () => {
    const reserved = new Map<number, ReservingRun>();
    for (const file of (await readdir(dir)).filter((f) => f.endsWith('.json'))) {
      const record = await readJson<RunRecord>(join(dir, file));
      if (!record || record.pid === pid || !alive(record.pid)) {
        if (record?.pid !== pid) await rm(join(dir, file), { force: true });
        continue;
      }
      for (const port of record.ports) reserved.set(port, { pid: record.pid, started: record.started });
    }
    const chosen = await choose(reserved);
    const record: RunRecord = { pid: pid, started: new Date().toISOString(), ports: chosen.ports };
    await writeFile(mine, `${JSON.stringify(record)}\n`);
    return chosen.value;
  });
  return { value, release: () => rm(mine, { force: true }) };
}
