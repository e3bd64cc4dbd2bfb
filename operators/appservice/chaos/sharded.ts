/**
 * @module chaos/sharded
 * One trial of the sharded chaos (chaos/shard-faults has the faults): with the namespace settled and the ring settled
 * (every replica a live member holding buckets, every bucket held by one of them), the harness starts a change on an
 * AppService in the target replica's buckets and on another one, injects the fault (within 1.5 s; a `pause` while
 * the target's reconcile of the change is under way, chaos/pause), lifts it, waits for the namespace
 * and the ring to settle again, and checks:
 * - the monitor's invariants (chaos/monitor): every AppService converges, children never duplicated, no orphans;
 * - the shard labels: every AppService carries one, and its live pods the same;
 * - the audit log (chaos/fences), over everything the operator wrote since the start: every write to a pod, an
 *   AppService or an Event about one made under the fence of its bucket by the writing process; no bucket taken
 *   from a member before its lease ran out; no Forbidden answer;
 * - the replicas: no crash, no crash loop, no unexpected error log; each replica's own `opkit_shards_held` agrees
 *   with the fences, and they add up to every bucket.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type AuditEvent, readAuditLog } from '@opkit/testenv';
import { type AppService, AppServices } from '../src/api/v1alpha1/appservice.ts';
import { type BodyEvent, fenceRelevant, slimEvent } from './audit-bodies.ts';
import { CHAOS_NAMESPACE, type ChaosCluster, OPERATOR_USER, type Replica } from './cluster.ts';
import { IMAGES, logViolations, randomChange, settle } from './faults.ts';
import { BUCKETS, bucketOfObject, type FenceFindings, fenceCheck } from './fences.ts';
import type { Monitor, Violation } from './monitor.ts';
import { workUnderWay } from './pause.ts';
import { acrossWebhookResets } from './resets.ts';
import {
  heldBy,
  identityOf,
  metric,
  readRing,
  ringProblems,
  ringSummary,
  scrape,
  shardLabelProblems,
  until,
} from './ring.ts';
import type { Rng } from './rng.ts';
import {
  type FaultContext,
  type FaultFigures,
  replicaAdd,
  replicaCutoff,
  replicaKill,
  replicaPause,
} from './shard-faults.ts';

export const SHARD_FAULT_KINDS = ['replica-kill', 'replica-add', 'replica-cutoff', 'pause'] as const;
export type ShardFaultKind = (typeof SHARD_FAULT_KINDS)[number];

export interface ShardTrialResult extends FaultFigures {
  readonly kind: ShardFaultKind;
  readonly action: string;
  /** The fault's start → its end (the cut lifted, the added replica gone, the killed one rebalanced and back). */
  readonly faultSeconds: number;
  /** The fault's end → the namespace and the ring settled. */
  readonly recoverySeconds: number;
  /** The whole trial, its checks included. */
  readonly trialSeconds: number;
  /** Fence changes in the trial (chaos/fences). */
  readonly handoffs: FenceFindings['handoffs'];
  /** The operator's writes the fence check judged in the trial. */
  readonly writesChecked: number;
  /** Each replica's buckets after the trial, and its own figures (`chaos-a 11 (own 11, members 3, cached 40)`). */
  readonly ring: string;
  /** A recovery slower than 10 s: what was still unsettled then. */
  readonly slow?: string;
  readonly violations: Violation[];
}

const RING_TIMEOUT_MS = 60_000;

export class ShardTrialRunner {
  readonly #c: ChaosCluster;
  readonly #m: Monitor;
  readonly #rng: Rng;
  #extra: Replica | undefined;
  #extraMember = false;
  #auditFrom = 0;
  readonly #events: BodyEvent[] = [];
  readonly #reported = new Set<string>();
  #seen: FenceFindings = { violations: [], checked: 0, handoffs: { acquired: 0, released: 0, freed: 0, taken: 0 } };
  readonly #heal: 'reset' | 'pass';

  /** `heal`: how a `replica-cutoff` cut heals (chaos/shard-faults; default `reset`). */
  /** An AppService's bucket, by the filter the replicas run. */
  #bucket(a: AppService): number | undefined {
    return bucketOfObject('appservices', a, this.#c.filter);
  }

  constructor(c: ChaosCluster, m: Monitor, rng: Rng, heal: 'reset' | 'pass' = 'reset') {
    this.#c = c;
    this.#m = m;
    this.#rng = rng;
    this.#heal = heal;
  }

  /** Every replica that ran so far. */
  #all(): Replica[] {
    return [...this.#c.replicas, ...(this.#extra ? [this.#extra] : [])];
  }

  #members(): string[] {
    return this.#all()
      .filter((r) => r !== this.#extra || this.#extraMember)
      .map((r) => r.name);
  }

  /**
   * Creates `count` AppServices (more, up to 16, until every replica owns one) and waits for them to converge and
   * the ring to settle; what broke, the audit log's findings included.
   */
  async prepare(count: number): Promise<Violation[]> {
    for (let i = 0; i < count; i++) await this.#createApp(i);
    const left = [...(await settle(this.#m, 180_000)), ...(await this.#ringSettled())];
    for (let i = count; i < 16 && left.length === 0; i++) {
      const view = await readRing(this.#c.admin);
      const owners = new Set(this.#m.apps().map((a) => view.holders[this.#bucket(a) ?? -1]));
      if (this.#c.replicas.every((r) => owners.has(identityOf(view, r.name)))) break;
      await this.#createApp(i);
      left.push(...(await settle(this.#m)));
    }
    left.push(...shardLabelProblems(this.#m.apps(), this.#m.pods(), this.#c.filter));
    left.push(...(await this.#audit()).violations, ...this.#m.violations.splice(0));
    for (const r of this.#all()) left.push(...logViolations(r.name, r.takeLog()));
    return left;
  }

  async #createApp(i: number): Promise<void> {
    await this.#c.admin.create(AppServices, {
      metadata: { name: `app-${i}`, namespace: CHAOS_NAMESPACE },
      spec: { replicas: 2, image: IMAGES[0] as string },
    } as never);
  }

  /** Each replica's AppServices now, for the log. */
  async owners(): Promise<string> {
    const view = await readRing(this.#c.admin);
    return this.#members()
      .map((r) => {
        const held = new Set(heldBy(view, identityOf(view, r)));
        const apps = this.#m.apps().filter((a) => held.has(this.#bucket(a) ?? -1));
        return `${r}: ${apps.map((a) => a.metadata.name).join(' ') || 'none'}`;
      })
      .join('; ');
  }

  /** One trial; whatever happens, every replica runs and every proxy passes traffic again afterwards. */
  async run(kind: ShardFaultKind): Promise<ShardTrialResult> {
    try {
      return await this.#run(kind);
    } finally {
      for (const r of this.#all()) {
        r.resume();
        r.proxy.setMode({ kind: 'pass' });
      }
    }
  }

  async #run(kind: ShardFaultKind): Promise<ShardTrialResult> {
    const start = performance.now();
    const before = [...(await settle(this.#m)), ...(await this.#ringSettled())];
    const violations = before.map((v) => ({ ...v, detail: `before the trial: ${v.detail}` }));
    const exitsBefore = new Map(this.#all().map((r) => [r, r.exits.length]));
    this.#m.arm();
    const target = this.#rng.pick(this.#c.replicas);
    const view = await readRing(this.#c.admin);
    const pauseAfterMs = kind === 'pause' ? workUnderWay(target, this.#rng) : undefined;
    let action = await this.#change(kind === 'replica-add' ? undefined : identityOf(view, target.name));
    await sleep(pauseAfterMs ?? this.#rng.int(0, 1_500));
    const figures: FaultFigures = {};
    const x = this.#context(violations, figures);
    const t0 = performance.now();
    if (kind === 'replica-kill') await replicaKill(x, target);
    else if (kind === 'replica-cutoff') await replicaCutoff(x, target);
    else if (kind === 'pause') action += `; ${await replicaPause(x, target)}`;
    else action += `; ${kind}; then ${await replicaAdd(x)}`;
    if (kind === 'replica-kill' || kind === 'replica-cutoff') action += `; ${kind} ${target.name}`;
    const faultEnd = performance.now();
    const after = await this.#after(exitsBefore);
    violations.push(...after.violations);
    return {
      kind,
      action,
      faultSeconds: (faultEnd - t0) / 1000,
      recoverySeconds: after.recoverySeconds,
      trialSeconds: (performance.now() - start) / 1000,
      ...figures,
      handoffs: after.handoffs,
      writesChecked: after.checked,
      ring: after.ring,
      ...(after.slow !== undefined ? { slow: after.slow } : {}),
      violations,
    };
  }

  #context(violations: Violation[], figures: FaultFigures): FaultContext {
    return {
      c: this.#c,
      rng: this.#rng,
      violations,
      figures,
      heal: this.#heal,
      addReplica: async () => {
        if (this.#extra) this.#extra.start();
        else this.#extra = await this.#c.spawnReplica();
        this.#extraMember = true;
        return this.#extra;
      },
      removedReplica: () => {
        this.#extraMember = false;
      },
      members: () => this.#members(),
      change: (identity, buckets) => this.#change(identity, buckets),
      settle: () => settle(this.#m),
    };
  }

  /**
   * A change on an AppService in `identity`'s buckets now, or in `buckets` when given (any, if none is there), and on
   * another one.
   */
  async #change(identity: string | undefined, buckets?: readonly number[]): Promise<string> {
    const view = await readRing(this.#c.admin);
    const apps = this.#m.apps().filter((a) => !a.metadata.deletionTimestamp);
    const bucket = (a: AppService) => this.#bucket(a) ?? -1;
    const mine = (b: number) => (buckets ? buckets.includes(b) : view.holders[b] === identity);
    const owned = identity || buckets ? apps.filter((a) => mine(bucket(a))) : [];
    const first = this.#rng.pick(owned.length > 0 ? owned : apps);
    const others = apps.filter((a) => a !== first);
    const picked = others.length > 0 ? [first, this.#rng.pick(others)] : [first];
    const done: string[] = [];
    for (const app of picked) done.push(await this.#changeOne(app));
    return done.join(', ');
  }

  async #changeOne(app: AppService): Promise<string> {
    const rng = this.#rng;
    const { patch, action, next } = randomChange(rng, app, { upTo: 5, max: 6, step: [1, 3] });
    if (next !== undefined) this.#m.allow(app, next);
    const name = app.metadata.name as string;
    await acrossWebhookResets(() => this.#c.admin.patch(AppServices, { namespace: CHAOS_NAMESPACE, name }, patch));
    return action;
  }

  /** Waits for the ring to settle with the members; what is still wrong after `RING_TIMEOUT_MS`. */
  async #ringSettled(): Promise<Violation[]> {
    let problems: string[] = [];
    const ok = await until(async () => {
      problems = ringProblems(await readRing(this.#c.admin), this.#members());
      return problems.length === 0 ? true : undefined;
    }, RING_TIMEOUT_MS);
    if (ok) return [];
    return [{ invariant: 'rebalance', detail: `the ring did not settle in 60 s: ${problems.join('; ')}` }];
  }

  async #after(exitsBefore: ReadonlyMap<Replica, number>) {
    const violations: Violation[] = [];
    const t = performance.now();
    let slow: string | undefined;
    const left = await settle(this.#m, 120_000, {
      afterMs: 10_000,
      note: (now) => {
        slow = now
          .slice(0, 3)
          .map((v) => v.detail)
          .join('; ');
      },
    });
    violations.push(...left, ...(await this.#ringSettled()));
    const recoverySeconds = (performance.now() - t) / 1000;
    await sleep(1_500); // late audit events are written; a replica that exited is waited for in #health
    violations.push(
      ...(await this.#health(exitsBefore)),
      ...shardLabelProblems(this.#m.apps(), this.#m.pods(), this.#c.filter),
    );
    const own = await this.#ownCounts();
    violations.push(...own.violations);
    const audit = await this.#audit();
    violations.push(...audit.violations, ...this.#m.violations.splice(0));
    return { violations, recoverySeconds, slow, ring: own.ring, handoffs: audit.handoffs, checked: audit.checked };
  }

  /** No crash, no crash loop, no unexpected error log; every member running (once the supervisor had its chance). */
  async #health(exitsBefore: ReadonlyMap<Replica, number>): Promise<Violation[]> {
    const out: Violation[] = [];
    const members = this.#members();
    for (const r of this.#all()) {
      const own = r.exits.slice(exitsBefore.get(r) ?? 0).filter((e) => !e.caused);
      if (own.length > 2)
        out.push({ invariant: 'crash-loop', detail: `${r.name} exited ${own.length} times on its own` });
      for (const e of own)
        if (e.code !== 1)
          out.push({ invariant: 'crash-loop', detail: `${r.name} crashed (exit ${e.code ?? e.signal})` });
      if (members.includes(r.name) && !(await r.runningAgain()))
        out.push({
          invariant: 'crash-loop',
          detail: `${r.name} is not running after the trial (its last: ${r.lastExit()})`,
        });
      out.push(...logViolations(r.name, r.takeLog()));
    }
    return out;
  }

  /** Each member's own figures agree with the fences and add up to every bucket (waited for up to 10 s). */
  async #ownCounts(): Promise<{ violations: Violation[]; ring: string }> {
    let problems: string[] = [];
    let ring = '';
    await until(
      async () => {
        const view = await readRing(this.#c.admin);
        problems = [];
        const parts: string[] = [];
        let sum = 0;
        for (const r of this.#all().filter((x) => this.#members().includes(x.name))) {
          const held = heldBy(view, identityOf(view, r.name)).length;
          const s = await scrape(r.metricsUrl);
          const own = s ? metric(s, 'opkit_shards_held') : undefined;
          sum += own ?? 0;
          if (own !== held) problems.push(`${r.name} counts ${own ?? 'no'} buckets, the fences give it ${held}`);
          parts.push(
            `${r.name} ${held} (own ${own ?? '?'}, members ${s ? metric(s, 'opkit_shard_members') : '?'}, cached ${s ? metric(s, 'opkit_cache_objects') : '?'})`,
          );
        }
        if (sum !== BUCKETS) problems.push(`the replicas' own counts add up to ${sum}, not ${BUCKETS}`);
        ring = parts.join(', ') || ringSummary(view, this.#members());
        return problems.length === 0 ? true : undefined;
      },
      10_000,
      500,
    );
    return { violations: problems.map((detail) => ({ invariant: 'metrics', detail })), ring };
  }

  /** Reads the audit log on from where it stopped and judges everything so far; the findings new since last time. */
  async #audit(): Promise<{ violations: Violation[]; checked: number; handoffs: FenceFindings['handoffs'] }> {
    const { events, end } = await readAuditLog(this.#c.auditLog, { from: this.#auditFrom, username: OPERATOR_USER });
    this.#auditFrom = end;
    for (const e of events) if (fenceRelevant(e)) this.#events.push(slimEvent(e as BodyEvent));
    const starts = new Map(this.#all().map((r) => [r.name, r.starts]));
    const found = fenceCheck(this.#events, { starts, filter: this.#c.filter });
    const fresh = found.violations.filter((v) => !this.#reported.has(v.detail));
    for (const v of fresh) this.#reported.add(v.detail);
    const was = this.#seen.handoffs;
    const handoffs = {
      acquired: found.handoffs.acquired - was.acquired,
      released: found.handoffs.released - was.released,
      freed: found.handoffs.freed - was.freed,
      taken: found.handoffs.taken - was.taken,
    };
    const checked = found.checked - this.#seen.checked;
    this.#seen = found;
    return { violations: [...fresh, ...forbidden(events)], checked, handoffs };
  }
}

/** The operator's Forbidden answers, one violation per verb and resource. */
function forbidden(events: readonly AuditEvent[]): Violation[] {
  const by = new Map<string, AuditEvent[]>();
  for (const e of events.filter((x) => x.responseStatus?.code === 403)) {
    const r = e.objectRef;
    const what = `${e.verb} ${r?.resource ?? ''}${r?.subresource ? `/${r.subresource}` : ''}`;
    by.set(what, [...(by.get(what) ?? []), e]);
  }
  return [...by].map(([what, es]) => ({
    invariant: 'forbidden',
    detail: `${es.length}× ${what}, first at ${es[0]?.requestReceivedTimestamp}`,
  }));
}
