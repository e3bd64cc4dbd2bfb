/**
 * @module chaos/faults
 * One trial: with the namespace settled, the harness starts a change (scale up, scale down or a template rollout) on
 * one AppService, injects one fault at a random moment, lifts it, waits for the namespace to settle again and checks
 * every invariant (monitor.ts) plus the replicas' health (no crash loop, no unexpected error logs) and the audit log
 * (no split brain). Fault kinds:
 * - `freeze`, `drop`, `reset`, `delay`: the leader's connection to the apiserver hangs silently / is closed / is
 *   reset / lags (a stale view), for a random while;
 * - `kill`: SIGKILL of the leader mid-change (the standby takes over; the supervisor restarts the killed one);
 * - `apiserver-restart`; `compaction`: etcd compacted and the apiserver restarted, so watches resume with 410 Gone;
 * - `leader-cutoff`: the leader cut off for longer than the lease: it must stop acting before the lease can expire;
 * - `handover`: SIGTERM of the leader with work in flight: drained, Lease released, the successor leads within 3 s;
 * - `watch-hang`: the standby's connection hangs silently: its watches must notice within 60 s;
 * - `webhook-down`: the webhook Service (admission and conversion, `failurePolicy: Fail`) refuses every connection
 *   for a while: a write in that time must be refused naming the webhook, and once it is back the change under way
 *   completes (the replicas' watches, which read through the conversion webhook, recover) — nothing is lost;
 * - `rolling-update`: one replica, leader or standby, is stopped gracefully (SIGTERM, as the kubelet does in a
 *   rolling update; the Service drops it 0–1.5 s later, as the endpoints learn of it), while writes that need the
 *   webhooks keep coming from four writers; every one of them must succeed, through the stop and the replica's
 *   return (the supervisor starts it again; the Service routes to it once it is ready);
 * - `pause`: the leader's process is stopped (SIGSTOP) with the change's reconcile under way, past its lease while the
 *   AppServices keep changing, until the standby has taken the Lease, then continued (SIGCONT; chaos/pause): it must
 *   not write once it runs again, and must stop leading within `RESUME_STOP_GOAL_SECONDS` (its process exits on the
 *   lost Lease, and comes back as a standby).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isNotFound } from '@opkit/runtime';
import { Pods } from '@opkit/runtime/kinds';
import { type AuditEvent, readAuditLog } from '@opkit/testenv';
import { type AppService, AppServices } from '../src/api/v1alpha1/appservice.ts';
import { LABELS } from '../src/controllers/pods.ts';
import { inWindows, type LeaseView, splitBrain } from './audit.ts';
import { CHAOS_NAMESPACE, type ChaosCluster, OPERATOR_USER } from './cluster.ts';
import { overshootEvidence } from './evidence.ts';
import type { Monitor, Violation } from './monitor.ts';
import { leaderStepsDown, pausePastLease, RESUME_STOP_GOAL_SECONDS, workUnderWay } from './pause.ts';
import { acrossWebhookResets } from './resets.ts';
import type { Rng } from './rng.ts';

export const FAULT_KINDS = [
  'freeze',
  'drop',
  'reset',
  'delay',
  'kill',
  'apiserver-restart',
  'compaction',
  'leader-cutoff',
  'handover',
  'watch-hang',
  'webhook-down',
  'rolling-update',
  'pause',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface TrialResult {
  readonly kind: FaultKind;
  readonly action: string;
  readonly faultSeconds: number;
  /** Fault lifted → namespace settled. */
  readonly recoverySeconds: number;
  /** kill / leader-cutoff / pause: the leader's loss → the standby holds the Lease. */
  readonly failoverSeconds?: number;
  /** handover: SIGTERM → the successor holds the Lease. */
  readonly handoverSeconds?: number;
  /** watch-hang: the hang → the standby's watch gives up on it; leader-cutoff: the cut → the leader stops. */
  readonly detectionSeconds?: number;
  /**
   * A replica took the Lease during the trial: the Lease taken → its controllers' workers started (the longest, if
   * several took it).
   */
  readonly takeoverSeconds?: number;
  /** rolling-update: the writes that needed the webhooks during the trial, and how many of them failed. */
  readonly webhookWrites?: { readonly sent: number; readonly failed: number };
  /** rolling-update: SIGTERM → the replica exited. */
  readonly stopSeconds?: number;
  /** pause: SIGCONT → the resumed leader stopped leading (it logged its lost Lease, or exited). */
  readonly resumeStopSeconds?: number;
  /** rolling-update: when each phase of its stop began, from the stopped replica's log (`phase +seconds, …`). */
  readonly stopPhases?: string;
  /** A recovery slower than 5 s: what was still unsettled then, to tell where the time went. */
  readonly slow?: string;
  /**
   * A recovery slower than 5 s: whether, at 5 s, only the nodes' part was left (pods not yet scheduled or Ready, the
   * operator's status already matching them) — the scheduler or the simulated kubelet still reconnecting.
   */
  readonly waitingOnNodes?: boolean;
  readonly violations: Violation[];
}

export const IMAGES = ['busybox:1.36', 'busybox:1.37'];

/**
 * A random change to `app`: a rollout to the other image, or a scale up (below `upTo` replicas: by `step`, to at most
 * `max`) or down; `next` is the new replica count of a scale.
 */
export function randomChange(
  rng: Rng,
  app: AppService,
  limits: { readonly upTo: number; readonly max: number; readonly step: readonly [number, number] },
): { patch: Record<string, unknown>; action: string; next?: number } {
  const replicas = app.spec.replicas ?? 1;
  const choice = rng.pick(['scale-up', 'scale-down', 'rollout']);
  if (choice === 'rollout') {
    const image = IMAGES[(IMAGES.indexOf(app.spec.image) + 1) % IMAGES.length] as string;
    return { patch: { spec: { image } }, action: `rollout ${app.metadata.name} to ${image}` };
  }
  const up = replicas === 0 || (choice === 'scale-up' && replicas < limits.upTo);
  const next = up ? Math.min(limits.max, replicas + rng.int(...limits.step)) : rng.int(0, replicas - 1);
  return { patch: { spec: { replicas: next } }, action: `scale ${app.metadata.name} ${replicas} → ${next}`, next };
}
const SETTLE_TIMEOUT_MS = 120_000;

/**
 * Waits until every invariant of a settled namespace holds twice in a row, 200 ms apart, in a view of the monitor that
 * is the apiserver's current state (`Monitor.current`); the remaining ones if not.
 */
export async function settle(
  m: Monitor,
  timeoutMs = SETTLE_TIMEOUT_MS,
  slow?: { readonly afterMs: number; note(unsettled: readonly Violation[]): void },
): Promise<Violation[]> {
  const t0 = performance.now();
  let streak = 0;
  let noted = false;
  let behind: string | undefined;
  for (;;) {
    const now = m.unsettled();
    streak = now.length === 0 ? streak + 1 : 0;
    if (streak >= 2) {
      behind = await m.current();
      if (behind === undefined) return [];
    }
    if (slow && !noted && now.length > 0 && performance.now() - t0 > slow.afterMs) {
      noted = true;
      slow.note(now);
    }
    if (performance.now() - t0 > timeoutMs)
      return now.length > 0 || behind === undefined
        ? now
        : [{ invariant: 'harness', detail: `the monitor's view did not catch up with the apiserver: ${behind}` }];
    await sleep(200);
  }
}

/** Polls the Lease until `ok(holderIdentity)`; the seconds it took, or undefined after `timeoutMs`. */
async function leaseUntil(
  c: ChaosCluster,
  ok: (holder: string) => boolean,
  timeoutMs: number,
): Promise<number | undefined> {
  const t0 = performance.now();
  while (performance.now() - t0 < timeoutMs) {
    if (ok((await c.lease())?.spec?.holderIdentity ?? '')) return (performance.now() - t0) / 1000;
    await sleep(100);
  }
  return undefined;
}

/** Another process holds the Lease: a new holder identity (the standby, or the old leader's restarted process). */
const successorOf = (identity: string) => (holder: string) => holder !== '' && holder !== identity;

export class TrialRunner {
  readonly #c: ChaosCluster;
  readonly #m: Monitor;
  readonly #rng: Rng;
  #auditFrom = 0;
  readonly #leaseView: LeaseView = { holder: undefined, since: 0 };
  /** The operator's audit events read so far (each trial reads only its own slice of the log). */
  readonly #events: AuditEvent[] = [];

  constructor(c: ChaosCluster, m: Monitor, rng: Rng) {
    this.#c = c;
    this.#m = m;
    this.#rng = rng;
  }

  /** Reads the audit log from where the last read stopped; the new events of the operator. */
  async #readAudit(): Promise<AuditEvent[]> {
    const { events, end } = await readAuditLog(this.#c.auditLog, { from: this.#auditFrom, username: OPERATOR_USER });
    this.#auditFrom = end;
    this.#events.push(...events);
    return events;
  }

  /** Every audit event of the operator so far, the log read up to now. */
  async auditEvents(): Promise<readonly AuditEvent[]> {
    await this.#readAudit();
    return this.#events;
  }

  /**
   * While the apiserver restarts, requests that reach it before its authorizer has loaded RBAC get 403 whatever the
   * RBAC says; these windows (plus 2 s) are kept so the least-privilege check can tell those apart.
   */
  readonly restartWindows: [number, number][] = [];

  async #restartApiserver(): Promise<void> {
    const from = Date.now();
    await this.#c.env.restart('kube-apiserver');
    this.restartWindows.push([from, Date.now() + 2_000]);
  }

  /**
   * Creates the AppServices trials work on and waits for the first convergence; then scales app-0 up, down and up
   * again, so every permission the operator holds is exercised whatever the trials draw (pod deletes, and a repeated
   * Event, which is patched to count 2); then re-parents app-0's pods: app-0 is deleted with its pods orphaned and
   * created again, and must adopt the same pods rather than run a second set (`adoption`).
   */
  async prepare(count: number): Promise<Violation[]> {
    for (let i = 0; i < count; i++)
      await this.#c.admin.create(AppServices, {
        metadata: { name: `app-${i}`, namespace: CHAOS_NAMESPACE },
        spec: { replicas: 2, image: IMAGES[0] as string },
      } as never);
    let left = await settle(this.#m, 180_000);
    for (const replicas of [4, 2, 4, 2]) {
      if (left.length > 0) break;
      await this.#c.admin.patch(AppServices, { namespace: CHAOS_NAMESPACE, name: 'app-0' }, { spec: { replicas } });
      left = await settle(this.#m);
    }
    if (left.length === 0) left = await this.#reparent('app-0');
    // judged too, so the first trial starts knowing who holds the Lease (and whom a takeover took it from)
    for (const d of splitBrain(await this.#readAudit(), this.#leaseView))
      left.push({ invariant: 'split-brain', detail: d });
    for (const r of this.#c.replicas) r.takeLog();
    return left;
  }

  /** Deletes `name` orphaning its pods, re-creates it, and checks that it adopted exactly those pods. */
  async #reparent(name: string): Promise<Violation[]> {
    const admin = this.#c.admin;
    const ref = { namespace: CHAOS_NAMESPACE, name };
    const selector = `${LABELS.instance}=${name}`;
    const podNames = async () =>
      (await admin.list(Pods, { namespace: CHAOS_NAMESPACE, labelSelector: selector })).items
        .filter((p) => !p.metadata.deletionTimestamp)
        .map((p) => p.metadata.name ?? '')
        .sort();
    const app = await admin.get(AppServices, ref);
    const before = await podNames();
    await admin.delete(AppServices, ref, { propagationPolicy: 'Orphan' });
    // gone, and its pods freed by the garbage collector (their controller references removed)
    const deadline = performance.now() + 60_000;
    for (;;) {
      let gone = false;
      try {
        await admin.get(AppServices, ref);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        gone = true;
      }
      const pods = (await admin.list(Pods, { namespace: CHAOS_NAMESPACE, labelSelector: selector })).items;
      if (gone && pods.every((p) => !p.metadata.ownerReferences?.some((r) => r.controller))) break;
      if (performance.now() > deadline)
        return [{ invariant: 'adoption', detail: `${name} and its pods' references were not gone within 60 s` }];
      await sleep(200);
    }
    await admin.create(AppServices, { metadata: { name, namespace: CHAOS_NAMESPACE }, spec: app.spec } as never);
    const left = await settle(this.#m);
    if (left.length > 0) return left;
    const after = await podNames();
    if (after.join(',') !== before.join(','))
      return [
        {
          invariant: 'adoption',
          detail: `re-created ${name} runs pods ${after.join(', ')} instead of adopting ${before.join(', ')}`,
        },
      ];
    return [];
  }

  /** One trial; whatever happens, every replica runs and every proxy passes traffic again afterwards. */
  async run(kind: FaultKind): Promise<TrialResult> {
    try {
      return await this.#run(kind);
    } finally {
      for (const r of this.#c.replicas) {
        r.resume();
        r.proxy.setMode({ kind: 'pass' });
      }
    }
  }

  /** Starts a random change on a random AppService (the monitor told what it allows); what it did. */
  async #change(): Promise<string> {
    const app = this.#rng.pick(this.#m.apps());
    const { patch, action, next } = randomChange(this.#rng, app, { upTo: 7, max: 8, step: [2, 5] });
    if (next !== undefined) this.#m.allow(app, next);
    const name = app.metadata.name as string;
    await acrossWebhookResets(() => this.#c.admin.patch(AppServices, { namespace: CHAOS_NAMESPACE, name }, patch));
    return action;
  }

  async #run(kind: FaultKind): Promise<TrialResult> {
    const c = this.#c;
    const rng = this.#rng;
    const violations: Violation[] = [];
    const pre = await settle(this.#m);
    violations.push(...pre.map((v) => ({ ...v, detail: `before the trial: ${v.detail}` })));
    // a replica the last trial restarted (a pause, a kill) serves again before the next fault, which never lands on a
    // replica still starting (a watch-hang then hangs its start-up requests, not a watch)
    const up = performance.now();
    while (c.webhooks.ready().length < c.replicas.length && performance.now() - up < 60_000) await sleep(100);
    const down = c.replicas.filter((r) => !c.webhooks.ready().includes(r.name)).map((r) => r.name);
    if (down.length > 0)
      violations.push({
        invariant: 'not-settled',
        detail: `before the trial: ${down.join(', ')} not ready within 60 s`,
      });
    await leaseUntil(c, (h) => h !== '', 30_000);
    const leaderIdentity = (await c.lease())?.spec?.holderIdentity ?? '';
    const leader = c.replicas.find((r) => leaderIdentity.startsWith(`${r.name}_`));
    if (!leader) {
      violations.push({ invariant: 'not-settled', detail: `no replica leads (Lease holder "${leaderIdentity}")` });
      return { kind, action: 'none', faultSeconds: 0, recoverySeconds: 0, violations };
    }
    const standby = c.replicas.find((r) => r !== leader);
    const exitsBefore = new Map(c.replicas.map((r) => [r, r.exits.length]));
    this.#m.arm();

    const pauseAfterMs = kind === 'pause' ? workUnderWay(leader, rng) : undefined;
    let action = await this.#change();
    await sleep(pauseAfterMs ?? rng.int(0, 1500));

    // the fault
    const t0 = performance.now();
    const t0Epoch = Date.now();
    const extra: {
      failoverSeconds?: number;
      handoverSeconds?: number;
      detectionSeconds?: number;
      webhookWrites?: { sent: number; failed: number };
      stopSeconds?: number;
      stopPhases?: string;
      takeoverSeconds?: number;
      resumeStopSeconds?: number;
    } = {};
    let harnessExits = 0;
    switch (kind) {
      case 'freeze':
      case 'drop':
        leader.proxy.setMode({ kind });
        await sleep(kind === 'freeze' ? rng.int(2_000, 12_000) : rng.int(1_000, 5_000));
        leader.proxy.setMode({ kind: 'pass' });
        break;
      case 'reset':
        leader.proxy.setMode({ kind: 'reset' });
        await sleep(500);
        leader.proxy.setMode({ kind: 'pass' });
        break;
      case 'delay':
        leader.proxy.setMode({ kind: 'delay', ms: rng.int(200, 1_500) });
        await sleep(rng.int(3_000, 8_000));
        leader.proxy.setMode({ kind: 'pass' });
        break;
      case 'kill': {
        await leader.kill();
        harnessExits = 1;
        const s = await leaseUntil(c, successorOf(leaderIdentity), 40_000);
        if (s === undefined) violations.push({ invariant: 'not-settled', detail: 'no failover within 40 s' });
        else extra.failoverSeconds = (performance.now() - t0) / 1000;
        break;
      }
      case 'webhook-down': {
        c.webhooks.down(true);
        await sleep(rng.int(500, 2_000));
        const refused = await c.admin
          .create(
            AppServices,
            {
              metadata: { name: 'while-webhook-down', namespace: CHAOS_NAMESPACE },
              spec: { replicas: 1, image: 'busybox' },
            } as AppService,
            { dryRun: true },
          )
          .then(
            () => 'accepted',
            (err: Error) => err.message,
          );
        if (!/failed calling webhook|conversion webhook/.test(refused))
          violations.push({
            invariant: 'webhook',
            detail: `a write while the webhook was down was not refused naming the webhook: ${refused.slice(0, 300)}`,
          });
        await sleep(rng.int(1_000, 6_000));
        c.webhooks.down(false);
        break;
      }
      case 'rolling-update': {
        const target = rng.pick(c.replicas);
        const writes = webhookWrites(c, 4);
        await sleep(rng.int(300, 1_000));
        const term = performance.now();
        harnessExits = 1;
        if (!(await target.stop(10_000, { endpointsLagMs: rng.int(0, 1_500) })))
          violations.push({ invariant: 'crash-loop', detail: `${target.name} still running 10 s after SIGTERM` });
        extra.stopSeconds = (performance.now() - term) / 1000;
        extra.stopPhases = stopPhases(target.peekLog());
        const exit = target.exits[target.exits.length - 1];
        if (exit?.code !== 0)
          violations.push({ invariant: 'crash-loop', detail: `SIGTERM: exit ${exit?.code ?? exit?.signal}, not 0` });
        // the new pod: started by the supervisor, routed to once ready; the writes go on until it has served a while
        const back = performance.now();
        while (!c.webhooks.ready().includes(target.name) && performance.now() - back < 60_000) await sleep(100);
        if (!c.webhooks.ready().includes(target.name))
          violations.push({ invariant: 'not-settled', detail: `${target.name} was not ready again within 60 s` });
        await sleep(1_000);
        const w = await writes.stop();
        extra.webhookWrites = { sent: w.sent, failed: w.failed.length };
        if (w.failed.length > 0) {
          const since = (at: number) => `${Math.round(at - term)} ms after SIGTERM`;
          const resets = c.webhooks.stats.resets.filter((r) => r.at >= term).map((r) => `${since(r.at)}: ${r.why}`);
          violations.push({
            invariant: 'webhook',
            detail: `${w.failed.length} of ${w.sent} writes that need the webhooks failed while ${target.name} stopped (exit ${extra.stopSeconds.toFixed(1)} s after SIGTERM): ${w.failed
              .slice(0, 3)
              .map((f) => `${since(f.at)}: ${f.message.slice(0, 250)}`)
              .join(' | ')}${resets.length ? `; the Service reset ${resets.slice(0, 5).join(', ')}` : ''}`,
          });
        }
        break;
      }
      case 'pause': {
        const since = { exitsBefore: leader.exits.length, logFrom: leader.peekLog().length };
        const paused = await pausePastLease({
          target: leader,
          rng,
          change: () => this.#change(),
          takenOver: async (from) => {
            const s = await leaseUntil(c, successorOf(leaderIdentity), 45_000);
            if (s !== undefined) extra.failoverSeconds = (performance.now() - from) / 1000;
            return s !== undefined;
          },
        });
        const resumedAt = performance.now();
        action += `; paused ${leader.name} ${paused.seconds.toFixed(1)} s, meanwhile ${paused.changes.join(', ')}`;
        if (!paused.takenOver)
          violations.push({ invariant: 'not-settled', detail: `${leader.name} paused: no successor within 45 s` });
        const s = await leaderStepsDown(leader, { ...since, resumedAt });
        if (s !== undefined) extra.resumeStopSeconds = s;
        if (s === undefined || s > RESUME_STOP_GOAL_SECONDS)
          violations.push({
            invariant: 'split-brain',
            detail: `${leader.name} resumed after ${paused.seconds.toFixed(1)} s paused, its Lease taken: ${s === undefined ? 'still leading 15 s later (no lost Lease logged, no exit)' : `stopped leading only ${s.toFixed(1)} s later`} (goal ≤ ${RESUME_STOP_GOAL_SECONDS} s)`,
          });
        break;
      }
      case 'apiserver-restart':
        await this.#restartApiserver();
        break;
      case 'compaction':
        await c.env.compactEtcd();
        await this.#restartApiserver();
        break;
      case 'leader-cutoff': {
        leader.proxy.setMode({ kind: 'freeze' });
        const exits = leader.exits.length;
        while (leader.exits.length === exits && performance.now() - t0 < 30_000) await sleep(50);
        if (leader.exits.length > exits) extra.detectionSeconds = (performance.now() - t0) / 1000;
        else violations.push({ invariant: 'split-brain', detail: 'the cut-off leader did not stop within 30 s' });
        const s = await leaseUntil(c, successorOf(leaderIdentity), 40_000);
        if (s === undefined) violations.push({ invariant: 'not-settled', detail: 'no failover within 40 s' });
        else extra.failoverSeconds = (performance.now() - t0) / 1000;
        // what the cut-off process sent while frozen is discarded, not delivered late (it has exited)
        leader.proxy.setMode({ kind: 'reset' });
        await sleep(200);
        leader.proxy.setMode({ kind: 'pass' });
        break;
      }
      case 'handover': {
        // SIGKILL once the successor was waited for (20 s at most) and 10 s more passed: a stop that hangs
        const stopped = leader.stop(60_000);
        harnessExits = 1;
        const s = await leaseUntil(c, successorOf(leaderIdentity), 20_000);
        const exitedInTime = await Promise.race([stopped, sleep(10_000).then(() => false)]);
        if (!exitedInTime) {
          violations.push({ invariant: 'crash-loop', detail: `${leader.name} still running 10 s after SIGTERM` });
          await leader.kill();
          await stopped;
        }
        if (s === undefined)
          violations.push({
            invariant: 'not-settled',
            detail: `no successor within 20 s; the Lease: ${JSON.stringify((await c.lease())?.spec)}; ${leader.name} said: ${leader.peekLog().slice(-3000)}; ${standby?.name} said: ${standby?.peekLog().slice(-1500)}`,
          });
        else extra.handoverSeconds = (performance.now() - t0) / 1000;
        const exit = leader.exits[leader.exits.length - 1];
        if (exit?.code !== 0)
          violations.push({ invariant: 'crash-loop', detail: `SIGTERM: exit ${exit?.code ?? exit?.signal}, not 0` });
        break;
      }
      case 'watch-hang': {
        const target = standby ?? leader;
        const before = target.peekLog().length;
        target.proxy.setMode({ kind: 'freeze' });
        let seen = '';
        while (performance.now() - t0 < 90_000) {
          seen = target.peekLog().slice(before);
          if (/watch went silent/.test(seen)) break;
          await sleep(250);
        }
        if (/watch went silent/.test(seen)) extra.detectionSeconds = (performance.now() - t0) / 1000;
        else
          violations.push({
            invariant: 'log',
            detail: `${target.name}: a hung watch went unnoticed for 90 s; its log: ${seen.slice(-1500)}`,
          });
        target.proxy.setMode({ kind: 'pass' });
        break;
      }
    }
    const faultEnd = performance.now();
    let slow: string | undefined;
    let waitingOnNodes: boolean | undefined;
    const left = await settle(this.#m, SETTLE_TIMEOUT_MS, {
      afterMs: 5_000,
      note: (unsettled) => {
        waitingOnNodes = this.#m.waitingOnNodes();
        slow = unsettled
          .slice(0, 3)
          .map((v) => v.detail)
          .join('; ');
      },
    });
    violations.push(...left);
    const recoverySeconds = (performance.now() - faultEnd) / 1000;
    await sleep(1_500); // late audit events are written; a replica that exited is waited for below

    // the replicas: no crash loop, no crash, no unexpected error
    const logs = new Map<string, string>();
    for (const r of c.replicas) {
      const own = r.exits.slice(exitsBefore.get(r) ?? 0).filter((e) => !e.caused);
      if (own.length > 2)
        violations.push({ invariant: 'crash-loop', detail: `${r.name} exited ${own.length} times on its own` });
      for (const e of own)
        if (e.code !== 1)
          violations.push({ invariant: 'crash-loop', detail: `${r.name} crashed (exit ${e.code ?? e.signal})` });
      if (!(await r.runningAgain()))
        violations.push({
          invariant: 'crash-loop',
          detail: `${r.name} is not running after the trial (its last: ${r.lastExit()})`,
        });
      const log = r.takeLog();
      logs.set(r.name, log);
      violations.push(...logViolations(r.name, log, this.restartWindows));
      const takeover = takeoverSeconds(log);
      if (takeover !== undefined) extra.takeoverSeconds = Math.max(extra.takeoverSeconds ?? 0, takeover);
      if (slow !== undefined) {
        const warnings = log.split('\n').filter((l) => /"level":"(warn|error)"/.test(l));
        for (const l of warnings.slice(-2)) slow += `; ${r.name}: ${l.slice(0, 300)}`;
      }
    }
    if (harnessExits === 0 && kind !== 'leader-cutoff')
      for (const r of c.replicas)
        if (r.exits.slice(exitsBefore.get(r) ?? 0).some((e) => e.caused))
          violations.push({ invariant: 'crash-loop', detail: `${r.name}: unexpected harness exit` });

    // the audit log: never two replicas acting at once
    const events = await this.#readAudit();
    for (const d of splitBrain(events, this.#leaseView)) violations.push({ invariant: 'split-brain', detail: d });
    const seen = this.#m.violations.splice(0);
    violations.push(...seen);
    if (seen.some((v) => v.invariant === 'overshoot'))
      violations.push({ invariant: 'harness', detail: overshootEvidence(t0Epoch, seen, events, logs) });
    return {
      kind,
      action,
      ...(slow !== undefined ? { slow, waitingOnNodes: waitingOnNodes ?? false } : {}),
      faultSeconds: (faultEnd - t0) / 1000,
      recoverySeconds,
      ...extra,
      violations,
    };
  }
}

/**
 * `writers` loops that create an AppService (dry-run: nothing is stored) over and over, each create calling the
 * conversion, defaulting and validating webhooks, until `stop()`; the writes sent, and when and how those that failed
 * did.
 */
function webhookWrites(
  c: ChaosCluster,
  writers: number,
): { stop(): Promise<{ sent: number; failed: { at: number; message: string }[] }> } {
  let stopping = false;
  let sent = 0;
  const failed: { at: number; message: string }[] = [];
  const loop = async (n: number) => {
    while (!stopping) {
      sent += 1;
      await c.admin
        .create(
          AppServices,
          {
            metadata: { name: `rolling-write-${n}`, namespace: CHAOS_NAMESPACE },
            spec: { replicas: 1, image: IMAGES[0] as string },
          } as AppService,
          { dryRun: true },
        )
        .catch((err: Error) => failed.push({ at: performance.now(), message: err.message }));
    }
  };
  const loops = Array.from({ length: writers }, (_, n) => loop(n));
  return {
    async stop() {
      stopping = true;
      await Promise.all(loops);
      return { sent, failed };
    },
  };
}

/** The phases of the last stop in a replica's log, each with its time since the first (`draining +0.00 s, …`). */
export function stopPhases(log: string): string {
  const lines = log
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      try {
        return JSON.parse(l) as { time?: string; msg?: string };
      } catch {
        return {};
      }
    })
    .filter((e) => e.msg === 'shutdown requested' || e.msg?.startsWith('stopping') || e.msg === 'stopped');
  const from = lines.findLastIndex((e) => e.msg === 'shutdown requested');
  const mine = from < 0 ? lines : lines.slice(from);
  const t0 = Date.parse(mine[0]?.time ?? '');
  return mine.map((e) => `${e.msg} +${((Date.parse(e.time ?? '') - t0) / 1000).toFixed(2)} s`).join(', ');
}

/**
 * Each takeover in a replica's log: from `became leader` (the Lease taken) to the last `starting workers` after it
 * (every controller reconciling, from the caches it kept warm while standing by); the longest, in seconds, or
 * `undefined` when the log has no takeover with its workers started.
 */
export function takeoverSeconds(log: string): number | undefined {
  let longest: number | undefined;
  let became: number | undefined;
  let started: number | undefined;
  const close = () => {
    if (became !== undefined && started !== undefined) longest = Math.max(longest ?? 0, (started - became) / 1000);
    became = undefined;
    started = undefined;
  };
  for (const line of log.split('\n')) {
    if (!line.startsWith('{')) continue;
    let e: { time?: string; msg?: string };
    try {
      e = JSON.parse(line) as { time?: string; msg?: string };
    } catch {
      continue;
    }
    const at = Date.parse(e.time ?? '');
    if (Number.isNaN(at)) continue;
    if (e.msg === 'became leader') {
      close();
      became = at;
    } else if (e.msg === 'starting workers' && became !== undefined) started = at;
    else if (e.msg === 'shutdown requested') close();
  }
  close();
  return longest;
}

/** Errors that are real under the faults injected: network and apiserver failures, conflicts, lost leadership. */
const EXPECTED_ERROR =
  /ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|socket hang up|Timeout|Unavailable|ServiceUnavailable|Conflict|TooManyRequests|InternalError|connection|leadership|lease|unreachable|Gone|aborted|closed|ended at once/i;

/** A stack trace or an unhandled rejection / uncaught exception in the output. */
export function crashSigns(replica: string, log: string): Violation[] {
  return /unhandled|uncaught/i.test(log) || /\n\s+at .+:\d+:\d+\)?\n/.test(log)
    ? [{ invariant: 'log', detail: `${replica}: a crash sign in the log: ${firstMatch(log)}` }]
    : [];
}

/**
 * A crash sign, or an error/fatal line that is not a fault's real error. A Forbidden logged while the apiserver
 * restarted is one: until its authorizer has loaded RBAC it refuses everyone (`restartWindows`, ms since the epoch).
 */
export function logViolations(
  replica: string,
  log: string,
  restartWindows: readonly (readonly [number, number])[] = [],
): Violation[] {
  const out: Violation[] = crashSigns(replica, log);
  for (const line of log.split('\n')) {
    if (!line.startsWith('{')) {
      if (line.trim() && !/^appservice-operator: /.test(line))
        out.push({ invariant: 'log', detail: `${replica}: unstructured output: ${line.slice(0, 200)}` });
      continue;
    }
    let entry: {
      level?: string;
      time?: string;
      msg?: string;
      code?: string;
      err?: string | { message?: string; code?: string };
    };
    try {
      entry = JSON.parse(line);
    } catch {
      out.push({ invariant: 'log', detail: `${replica}: a broken log line: ${line.slice(0, 200)}` });
      continue;
    }
    if (entry.level !== 'error' && entry.level !== 'fatal') continue;
    const err = typeof entry.err === 'string' ? entry.err : `${entry.err?.code ?? ''} ${entry.err?.message ?? ''}`;
    const text = `${entry.msg ?? ''} ${entry.code ?? ''} ${err}`;
    const restarting = inWindows(Date.parse(entry.time ?? ''), restartWindows);
    if (!EXPECTED_ERROR.test(text) && !(restarting && /Forbidden/.test(text)))
      out.push({ invariant: 'log', detail: `${replica}: ${entry.level}: ${text.slice(0, 300)}` });
  }
  return out;
}

function firstMatch(log: string): string {
  const at = log.search(/unhandled|uncaught|\n\s+at /i);
  return log.slice(Math.max(0, at - 200), at + 200).replace(/\n/g, ' | ');
}
