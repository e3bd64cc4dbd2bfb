/**
 * @module chaos/shard-faults
 * The faults of the sharded chaos, each injected while a change is under way, with what it measures:
 * - `replica-kill`: SIGKILL of one replica (the supervisor starts it again a second later, as a new member). Measures
 *   the rebalance: the kill → every bucket the killed process held is held by a live member (goal ≤ the lease
 *   duration + 5 s), and the rejoin: the kill → its new process holds a bucket;
 * - `replica-cutoff`: one replica's connection to the apiserver hangs (its fault proxy freezes) for longer than the
 *   lease duration while the others run. Measures the stop: the cut → the replica's own `opkit_shards_held` is 0
 *   (or it exited) — goal ≤ the renew deadline, since its last renewal was at the cut or before; the rebalance, as
 *   for a kill; and the rejoin after the cut is lifted. By default (`heal: 'reset'`) what it sent while cut off is
 *   discarded, not delivered late (the proxy resets its connections before passing again: a partition longer than
 *   the lease outlives them); `heal: 'pass'` delivers it late instead, on the same connections (a partition that
 *   heals under live TCP connections), so the fence check sees whether a stale write can land;
 * - `replica-add`: a fourth replica starts: the start → it holds a bucket (join), the ring settles with four and the
 *   namespace settles; then, with a second change under way, it is stopped gracefully (SIGTERM, as a scale-down): it
 *   must exit 0, and its buckets must all be held by the others (leave) and its member Lease be gone. So every trial
 *   starts with the same three replicas.
 * - `pause`: one replica's process is stopped (SIGSTOP) past its lease while the AppServices of its buckets keep
 *   changing, until every bucket it held is held by a live member, then continued (SIGCONT; chaos/pause). Measures the
 *   rebalance, as for a kill; the stop after the resume (SIGCONT → its own `opkit_shards_held` is 0, or it exited);
 *   and the rejoin. The fence check judges whether it wrote once continued.
 * Each fault adds what broke to `violations` and its figures to `figures`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChaosCluster, Replica } from './cluster.ts';
import { TIMINGS } from './fences.ts';
import type { Violation } from './monitor.ts';
import { pausePastLease, RESUME_STOP_GOAL_SECONDS } from './pause.ts';
import { heldBy, identityOf, metric, readRing, ringProblems, scrape, until } from './ring.ts';
import type { Rng } from './rng.ts';

/** The figures a fault measures, in seconds (see the module comment). */
export interface FaultFigures {
  rebalanceSeconds?: number;
  /** Who took the lost buckets: `<identity> <buckets>, …`. */
  rebalancedTo?: string;
  /** kill: the kill → the restarted process is a live member (it joined the ring). */
  memberSeconds?: number;
  stopSeconds?: number;
  rejoinSeconds?: number;
  joinSeconds?: number;
  leaveSeconds?: number;
  /** pause: SIGCONT → the paused replica stopped every bucket (or exited). */
  resumeStopSeconds?: number;
}

/** What a fault works with. */
export interface FaultContext {
  readonly c: ChaosCluster;
  readonly rng: Rng;
  readonly violations: Violation[];
  readonly figures: FaultFigures;
  /** How a cut heals: its connections reset (default), or what was held delivered late. */
  readonly heal: 'reset' | 'pass';
  /** The fourth replica, started (spawned the first time). */
  addReplica(): Promise<Replica>;
  /** The fourth replica is no member any more (it was stopped). */
  removedReplica(): void;
  /** The names of the replicas that should be ring members now. */
  members(): string[];
  /**
   * Starts a change on an AppService in `identity`'s buckets (or in `buckets`, when given) and on another one; what
   * it did.
   */
  change(identity: string | undefined, buckets?: readonly number[]): Promise<string>;
  /** Waits for the namespace to settle; what is still unsettled. */
  settle(): Promise<Violation[]>;
}

/** The rebalance bound: the member lease duration + 5 s. */
export const REBALANCE_GOAL_SECONDS = TIMINGS.leaseSeconds + 5;
/** The cut → the cut-off replica stopped: the renew deadline (its last renewal was at the cut or before), + polling. */
export const STOP_GOAL_SECONDS = TIMINGS.renewDeadlineSeconds + 0.5;
const since = (t0: number) => (performance.now() - t0) / 1000;

/**
 * Waits until every bucket `lost` held is held by someone else (and not released): the seconds since `t0`
 * (`performance.now()` when it was lost), and who took them; for a kill, also when `restarted`'s new process joined.
 */
async function rebalanced(x: FaultContext, lost: Holdings, t0: number, what: string, restarted?: string) {
  const taken = new Map<number, number>();
  const takers = new Map<string, number>();
  const done = await until(async () => {
    const v = await readRing(x.c.admin);
    const back = restarted === undefined ? undefined : identityOf(v, restarted);
    if (back !== undefined && back !== lost.id) x.figures.memberSeconds ??= since(t0);
    for (const b of lost.held) {
      const h = v.holders[b] as string;
      if (taken.has(b) || h === lost.id || h === '') continue;
      taken.set(b, since(t0));
      takers.set(h, (takers.get(h) ?? 0) + 1);
    }
    return taken.size === lost.held.length ? v : undefined;
  }, 45_000);
  const seconds = since(t0);
  x.figures.rebalancedTo = [...takers].map(([id, n]) => `${id} ${n}`).join(', ');
  if (done) x.figures.rebalanceSeconds = seconds;
  if (done && seconds <= REBALANCE_GOAL_SECONDS) return;
  const renewed = lost.renewedAt === undefined ? '?' : ((lost.at - lost.renewedAt) / 1000).toFixed(1);
  const when = [...taken].map(([b, s]) => `${b} at ${s.toFixed(1)} s`).join(', ');
  const left = lost.held.filter((b) => !taken.has(b));
  x.violations.push({
    invariant: 'rebalance',
    detail: `${what}: ${done ? `the ${lost.held.length} buckets of ${lost.id} were held by live members only ${seconds.toFixed(1)} s later (goal ≤ ${REBALANCE_GOAL_SECONDS} s)` : `buckets ${left.join(', ')} of ${lost.id} still not held by a live member 45 s later`}; its member Lease was last renewed ${renewed} s before; taken: ${when || 'none'}`,
  });
}

/** Waits until a process of `replica` other than `old` holds a bucket; the seconds since `t0`. */
async function rejoined(x: FaultContext, replica: string, old: string | undefined, t0: number): Promise<void> {
  const back = await until(async () => {
    const v = await readRing(x.c.admin);
    const id = identityOf(v, replica);
    return id !== undefined && id !== old && heldBy(v, id).length > 0 ? id : undefined;
  }, 60_000);
  if (back) x.figures.rejoinSeconds = since(t0);
  else x.violations.push({ invariant: 'rebalance', detail: `${replica} held no bucket again within 60 s` });
}

/** A replica's process and its buckets, as the ring showed them at `at` (ms since the epoch). */
interface Holdings {
  readonly id: string;
  readonly held: readonly number[];
  readonly at: number;
  /** When its member Lease was last renewed (ms since the epoch). */
  readonly renewedAt: number | undefined;
}

/** The live identity of `r` and its buckets; a violation if it has none. */
async function holdings(x: FaultContext, r: Replica): Promise<Holdings> {
  const view = await readRing(x.c.admin);
  const id = identityOf(view, r.name) ?? '';
  const held = heldBy(view, id);
  if (held.length === 0)
    x.violations.push({ invariant: 'rebalance', detail: `${r.name} (${id || 'no member'}) held no bucket` });
  return { id, held, at: Date.now(), renewedAt: view.renewed.get(id) };
}

export async function replicaKill(x: FaultContext, target: Replica): Promise<void> {
  const lost = await holdings(x, target);
  const t0 = performance.now();
  await target.kill();
  await rebalanced(x, { ...lost, at: Date.now() }, t0, `SIGKILL of ${target.name}`, target.name);
  await rejoined(x, target.name, lost.id, t0);
}

export async function replicaCutoff(x: FaultContext, target: Replica): Promise<void> {
  const lost = await holdings(x, target);
  const t0 = performance.now();
  const cutAt = Date.now();
  target.proxy.setMode({ kind: 'freeze' });
  await stops(x, target, lost.held.length, t0);
  await rebalanced(x, { ...lost, at: cutAt }, t0, `${target.name} cut off`);
  const hold = TIMINGS.leaseSeconds * 1000 + x.rng.int(3_000, 6_000) - (performance.now() - t0);
  if (hold > 0) await sleep(hold);
  if (x.heal === 'reset') {
    target.proxy.setMode({ kind: 'reset' });
    await sleep(200);
  }
  target.proxy.setMode({ kind: 'pass' });
  await rejoined(x, target.name, undefined, performance.now());
}

/** What `target` logged lately that matches `re` (its last two such lines). */
const said = (target: Replica, re: RegExp) =>
  target
    .peekLog()
    .split('\n')
    .filter((l) => re.test(l))
    .slice(-2)
    .map((l) => l.slice(0, 300))
    .join(' | ');

/** The buckets `target` had lost by its own metrics (`opkit_shard_handoffs_total{direction="lost"}`); 0 unread. */
async function lostCount(target: Replica): Promise<number> {
  const s = await scrape(target.metricsUrl);
  return s ? (metric(s, 'opkit_shard_handoffs_total', { direction: 'lost' }) ?? 0) : 0;
}

/**
 * Polls `target`'s own metrics (for 20 s) until it has stopped every bucket: its lost handoffs grew by `held` past
 * `lostBefore`, or its `opkit_shards_held` is 0 — or it exited after `exitsBefore` exits. How it stopped (undefined
 * if it did not), and the gauge last read.
 */
async function stoppedBuckets(
  target: Replica,
  o: { readonly held: number; readonly lostBefore: number; readonly exitsBefore: number },
): Promise<{ readonly how: 'exited' | 'stopped' | undefined; readonly gauge: number | undefined }> {
  let gauge: number | undefined;
  const stopped = await until(async () => {
    if (target.exits.length > o.exitsBefore) return 'exited' as const;
    const s = await scrape(target.metricsUrl);
    if (!s) return undefined;
    gauge = metric(s, 'opkit_shards_held');
    const lost = (metric(s, 'opkit_shard_handoffs_total', { direction: 'lost' }) ?? 0) - o.lostBefore;
    return gauge === 0 || (o.held > 0 && lost >= o.held) ? ('stopped' as const) : undefined;
  }, 20_000);
  return { how: stopped?.value, gauge };
}

/**
 * The cut-off replica stops every bucket within the renew deadline (`t0`: the cut), by its own metrics: its
 * `opkit_shard_handoffs_total{direction="lost"}` grows by the `held` buckets or its `opkit_shards_held` drops to 0
 * (or it exits); once stopped, its `opkit_shards_held` must say 0.
 */
async function stops(x: FaultContext, target: Replica, held: number, t0: number): Promise<void> {
  const exitsBefore = target.exits.length;
  const stopped = await stoppedBuckets(target, { held, lostBefore: await lostCount(target), exitsBefore });
  const deadline = STOP_GOAL_SECONDS;
  const seconds = since(t0);
  if (stopped.how) x.figures.stopSeconds = seconds;
  if (!stopped.how || seconds > deadline)
    x.violations.push({
      invariant: 'membership',
      detail: `${target.name} cut off: ${stopped.how ? `stopped its buckets only ${seconds.toFixed(1)} s after the cut` : `no bucket lost and opkit_shards_held ${stopped.gauge ?? 'not reported'} 20 s after the cut`} (goal ≤ the renew deadline, ${TIMINGS.renewDeadlineSeconds} s, + ${STOP_GOAL_SECONDS - TIMINGS.renewDeadlineSeconds} s for the polling); it said: ${said(target, /sharding/)}`,
    });
  if (stopped.how !== 'stopped' || stopped.gauge === 0) return;
  await sleep(1_000);
  const again = await scrape(target.metricsUrl);
  const gauge = again ? metric(again, 'opkit_shards_held') : stopped.gauge;
  if (gauge !== 0)
    x.violations.push({
      invariant: 'metrics',
      detail: `${target.name} lost its ${held} buckets ${seconds.toFixed(1)} s after the cut (opkit_shard_handoffs_total{direction="lost"}), but a second later its opkit_shards_held still said ${gauge}; it said: ${said(target, /stopped every bucket/)}`,
    });
}

/**
 * The `pause` fault (chaos/pause): `target`, holding buckets with a change under way in them, is stopped past its
 * lease while the AppServices of its buckets keep changing, until every bucket it held is held by a live member;
 * continued, it must stop every bucket within `RESUME_STOP_GOAL_SECONDS` (by its own metrics, as `stops`), then
 * rejoin. Measures the rebalance (the stop → its buckets held by others), the stop after SIGCONT and the rejoin. What
 * it did.
 */
export async function replicaPause(x: FaultContext, target: Replica): Promise<string> {
  const lost = await holdings(x, target);
  const before = { held: lost.held.length, lostBefore: await lostCount(target), exitsBefore: target.exits.length };
  const paused = await pausePastLease({
    target,
    rng: x.rng,
    change: () => x.change(lost.id, lost.held),
    takenOver: async (t0) => {
      await rebalanced(x, { ...lost, at: Date.now() }, t0, `${target.name} paused`);
      return x.figures.rebalanceSeconds !== undefined;
    },
  });
  const resumed = performance.now();
  const stopped = await stoppedBuckets(target, before);
  const seconds = since(resumed);
  if (stopped.how) x.figures.resumeStopSeconds = seconds;
  if (!stopped.how || seconds > RESUME_STOP_GOAL_SECONDS)
    x.violations.push({
      invariant: 'membership',
      detail: `${target.name} resumed after ${paused.seconds.toFixed(1)} s paused, its buckets taken: ${stopped.how ? `stopped its ${lost.held.length} buckets only ${seconds.toFixed(1)} s later` : `had not stopped its buckets 20 s later (opkit_shards_held ${stopped.gauge ?? 'not reported'})`} (goal ≤ ${RESUME_STOP_GOAL_SECONDS} s); it said: ${said(target, /sharding/)}`,
    });
  await rejoined(x, target.name, undefined, resumed);
  return `pause ${target.name} (${lost.held.length} buckets) ${paused.seconds.toFixed(1)} s, meanwhile ${paused.changes.join(', ')}`;
}

/** The fourth replica joins, then leaves gracefully with a second change under way; what that change was. */
export async function replicaAdd(x: FaultContext): Promise<string> {
  const t0 = performance.now();
  const r = await x.addReplica();
  const joined = await until(async () => {
    const v = await readRing(x.c.admin);
    const id = identityOf(v, r.name);
    return id !== undefined && heldBy(v, id).length > 0 ? id : undefined;
  }, 60_000);
  if (joined) x.figures.joinSeconds = since(t0);
  else x.violations.push({ invariant: 'rebalance', detail: `${r.name} held no bucket within 60 s of its start` });
  const ring = await until(async () => {
    const p = ringProblems(await readRing(x.c.admin), x.members());
    return p.length === 0 ? true : undefined;
  }, 60_000);
  if (!ring) x.violations.push({ invariant: 'rebalance', detail: `the ring did not settle with ${r.name} in 60 s` });
  const left = await x.settle();
  x.violations.push(...left.map((v) => ({ ...v, detail: `with ${r.name} added: ${v.detail}` })));
  const action = await x.change(joined?.value);
  await sleep(x.rng.int(0, 1_000));
  await leave(x, r, joined?.value);
  return action;
}

/** SIGTERM of the added replica: exit 0, its buckets all held by the others, its member Lease gone. */
async function leave(x: FaultContext, r: Replica, id: string | undefined): Promise<void> {
  const t0 = performance.now();
  const inTime = await r.retire(10_000);
  x.removedReplica();
  const exit = r.exits[r.exits.length - 1];
  if (!inTime) x.violations.push({ invariant: 'crash-loop', detail: `${r.name} still running 10 s after SIGTERM` });
  else if (exit?.code !== 0)
    x.violations.push({ invariant: 'crash-loop', detail: `${r.name}: SIGTERM: exit ${exit?.code ?? exit?.signal}` });
  if (id === undefined) return;
  const gone = await until(async () => {
    const v = await readRing(x.c.admin);
    return heldBy(v, id).length === 0 && v.holders.every((h) => h !== '') ? v : undefined;
  }, 30_000);
  if (gone) x.figures.leaveSeconds = since(t0);
  else
    x.violations.push({ invariant: 'rebalance', detail: `buckets of ${id} not all held by others 30 s after it left` });
  if (gone?.value.members.has(id))
    x.violations.push({ invariant: 'membership', detail: `${r.name} stopped gracefully but left its member Lease` });
}
