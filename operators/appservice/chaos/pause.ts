/**
 * @module chaos/pause
 * The `pause` fault of both modes. A replica that acts (the leader; sharded, one holding buckets) is stopped where it
 * stands (SIGSTOP) in the middle of a reconcile: its link to the apiserver is slowed from just before a change to its
 * AppServices until the stop (`workUnderWay`), so the stop finds the change's reconcile waiting on an answer — which
 * then waits in its socket, the first thing it reads once continued. It stays stopped for longer than its Lease: until
 * another replica has taken over its Lease (or every fence it held), and at least the lease duration plus 2–8 s,
 * drawn from the seed, while the harness goes on changing AppServices, so watch events, requeues and retries pile up
 * for it. Then it is continued (SIGCONT). Whatever runs first in it then (the answer it waited for, the piled-up watch
 * events, an overdue requeue or retry timer, or the timer that notices its Lease is stale) must not write: the audit
 * log judges that (chaos/audit `splitBrain` for the leader, chaos/fences for the buckets). After the resume, each mode
 * checks that the replica stopped acting within `RESUME_STOP_GOAL_SECONDS`: the leader logs its lost Lease (its
 * process then exits, and the supervisor starts it again as a standby); a sharded replica drops every bucket, then
 * rejoins through the fences.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Replica } from './cluster.ts';
import { TIMINGS } from './fences.ts';
import type { Rng } from './rng.ts';

/** How much longer than the lease duration a replica stays stopped, at least (ms, drawn from the seed). */
export const PAUSE_MARGIN_MS = [2_000, 8_000] as const;
/** SIGCONT → the resumed replica stopped acting. */
export const RESUME_STOP_GOAL_SECONDS = 5;
/** The changes made while a replica is stopped (drawn from the seed). */
const CHANGES = [3, 6] as const;
/** How much the link of a replica about to be paused is slowed, each way (ms, drawn from the seed). */
export const SLOW_LINK_MS = [150, 400] as const;

/**
 * Slows `target`'s link to the apiserver (by `SLOW_LINK_MS`, drawn) before a change is started, so that the change's
 * reconcile spends its time waiting on answers; how long to wait after the change before the pause: 1.2–2.8 times the
 * delay, while its first write or the answer to it is on the way (drawn). `pausePastLease` restores the link once the
 * process is stopped, delivering what the delay held while the paused replica still holds its Lease.
 */
export function workUnderWay(target: Replica, rng: Rng): number {
  const ms = rng.int(...SLOW_LINK_MS);
  target.proxy.setMode({ kind: 'delay', ms });
  return rng.int(Math.round(ms * 1.2), Math.round(ms * 2.8));
}

/** What `pausePastLease` works with. */
export interface PauseOptions {
  readonly target: Replica;
  readonly rng: Rng;
  /** Starts one change on an AppService whose work falls to the paused replica; what it did. */
  change(): Promise<string>;
  /**
   * Resolves true once another replica took over the paused one's Lease (or fences), false if none did in time;
   * `t0` is when the process was stopped (`performance.now()`).
   */
  takenOver(t0: number): Promise<boolean>;
}

/** What a pause did. */
export interface Paused {
  /** SIGSTOP → SIGCONT, in seconds. */
  readonly seconds: number;
  readonly takenOver: boolean;
  /** The changes made while it was stopped. */
  readonly changes: readonly string[];
}

/**
 * Stops `target` past its lease while AppServices change, then continues it (see the module comment). The changes
 * come at times drawn up front, so a seed gives the same draws whatever the timing; the process is continued
 * whatever fails.
 */
export async function pausePastLease(o: PauseOptions): Promise<Paused> {
  const holdMs = TIMINGS.leaseSeconds * 1000 + o.rng.int(...PAUSE_MARGIN_MS);
  const offsets = Array.from({ length: o.rng.int(...CHANGES) }, () => o.rng.int(500, holdMs - 1_000)).sort(
    (a, b) => a - b,
  );
  await o.target.pause();
  const t0 = performance.now();
  o.target.proxy.setMode({ kind: 'pass' });
  const changes: string[] = [];
  try {
    const churn = (async () => {
      for (const ms of offsets) {
        const wait = ms - (performance.now() - t0);
        if (wait > 0) await sleep(wait);
        changes.push(await o.change());
      }
    })();
    const [takenOver] = await Promise.all([o.takenOver(t0), churn]);
    const left = holdMs - (performance.now() - t0);
    if (left > 0) await sleep(left);
    return { seconds: (performance.now() - t0) / 1000, takenOver, changes };
  } finally {
    o.target.resume();
  }
}

/**
 * A leader continued after its Lease was taken: the seconds from `resumedAt` (`performance.now()`) until it stopped
 * leading — it logged its lost Lease, or its process exited (`exitsBefore`: its exit count before the pause; `logFrom`:
 * the length of its `peekLog()` then) — or undefined if neither happened within `timeoutMs`.
 */
export async function leaderStepsDown(
  leader: Replica,
  since: { readonly resumedAt: number; readonly exitsBefore: number; readonly logFrom: number },
  timeoutMs = 15_000,
): Promise<number | undefined> {
  for (;;) {
    const seconds = (performance.now() - since.resumedAt) / 1000;
    const lost = /leader election lost/.test(leader.peekLog().slice(since.logFrom));
    if (lost || leader.exits.length > since.exitsBefore) return seconds;
    if (seconds * 1000 > timeoutMs) return undefined;
    await sleep(50);
  }
}
