/**
 * @module chaos/monitor
 * Watches the chaos namespace from outside the operator (an admin informer on AppServices and pods) and checks the
 * invariants:
 * - overshoot: after the first convergence, an AppService never has more live pods (not terminating, not finished)
 *   than the larger of its replicas before and after the change under way (the rollout surge is 0: old pods are
 *   deleted before their replacements are created). Seen on every pod event, in the apiserver's order;
 * - settled: pods = spec.replicas, every pod on the current image, status equal to the pods (replicas, readyReplicas,
 *   updatedReplicas, podNames, observedGeneration);
 * - no orphans: every pod of the operator has a controller owner that exists.
 *
 * Its view lags the apiserver (after an apiserver restart, by its informers' retry backoff), and a lagging view can
 * look settled: the state before a change, consistent with itself. So `current()` compares it with a fresh list, and
 * a namespace counts as settled only when it is (chaos/faults' `settle`): an allowance armed from a stale spec would
 * report the pods the change makes once the view catches up as an overshoot.
 */
import { Cache } from '@opkit/runtime/cache';
import type { Client } from '@opkit/runtime/client';
import { type Pod, Pods } from '@opkit/runtime/kinds';
import { type AppService, AppServices } from '../src/api/v1alpha1/appservice.ts';
import { LABELS, MANAGED_BY } from '../src/controllers/pods.ts';
import { CHAOS_NAMESPACE } from './cluster.ts';

export interface Violation {
  readonly invariant:
    | 'overshoot'
    | 'not-settled'
    | 'status'
    | 'orphan'
    | 'adoption'
    | 'crash-loop'
    | 'log'
    | 'split-brain'
    | 'webhook'
    | 'harness'
    | 'fence'
    | 'membership'
    | 'shard-label'
    | 'rebalance'
    | 'metrics'
    | 'forbidden';
  readonly detail: string;
  /** When it was seen (ms since the epoch), where that matters (an overshoot). */
  readonly at?: number;
}

const live = (p: Pod) =>
  !p.metadata.deletionTimestamp && p.status?.phase !== 'Failed' && p.status?.phase !== 'Succeeded';
const ready = (p: Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

export class Monitor {
  readonly #cache: Cache;
  readonly #admin: Client;
  readonly #apps;
  readonly #pods;
  /** Per AppService UID: the replica count allowed right now (max of before and after the change under way). */
  readonly #allowed = new Map<string, number>();
  #armed = false;
  readonly violations: Violation[] = [];
  readonly #seen = new Set<string>();

  constructor(admin: Client, signal: AbortSignal) {
    this.#admin = admin;
    this.#cache = new Cache({ client: admin, namespace: CHAOS_NAMESPACE });
    this.#cache.start(signal);
    this.#apps = this.#cache.informer(AppServices);
    this.#pods = this.#cache.informer(Pods);
    const check = (pod: Pod) => this.#checkOvershoot(pod);
    this.#pods.addEventHandler({ add: check, update: (_o, p) => check(p) });
  }

  async synced(): Promise<void> {
    await Promise.all([this.#apps.waitForSync(), this.#pods.waitForSync()]);
  }

  apps(): AppService[] {
    return this.#apps.store.list();
  }

  pods(): Pod[] {
    return this.#pods.store.list();
  }

  /**
   * Whether this view is the apiserver's current state of the namespace (the same AppServices and pods, at the same
   * resourceVersions): undefined if so, else the first difference (or why the apiserver could not be asked).
   */
  async current(): Promise<string | undefined> {
    const ns = { namespace: CHAOS_NAMESPACE };
    try {
      const apps = stalePart(this.apps(), (await this.#admin.list(AppServices, ns)).items);
      if (apps !== undefined) return `appservices: ${apps}`;
      const pods = stalePart(this.pods(), (await this.#admin.list(Pods, ns)).items);
      return pods === undefined ? undefined : `pods: ${pods}`;
    } catch (err) {
      return `cannot list the namespace: ${(err as Error).message}`;
    }
  }

  /** From now on, overshoot counts; the allowance of each AppService is reset to its current (settled) spec. */
  arm(): void {
    this.#armed = true;
    for (const a of this.apps()) this.#allowed.set(a.metadata.uid as string, a.spec.replicas ?? 1);
  }

  /**
   * The harness is about to set `app`'s replicas to `replicas`: until the next `arm()`, the larger of the two is
   * allowed. (Told by the harness rather than read from the AppService watch: after a relist the pod watch may be
   * ahead of the AppService watch.)
   */
  allow(app: AppService, replicas: number): void {
    const uid = app.metadata.uid as string;
    this.#allowed.set(uid, Math.max(this.#allowed.get(uid) ?? 0, replicas));
  }

  #checkOvershoot(pod: Pod): void {
    if (!this.#armed) return;
    const owner = pod.metadata.ownerReferences?.find((r) => r.controller)?.uid;
    if (!owner) return;
    const allowed = this.#allowed.get(owner);
    if (allowed === undefined) return;
    const count = this.#pods.store.byIndex('controller', owner).filter(live).length;
    const key = `${owner}/${count}`;
    if (count > allowed && !this.#seen.has(key)) {
      this.#seen.add(key);
      const app = this.apps().find((a) => a.metadata.uid === owner)?.metadata.name ?? owner;
      this.violations.push({
        invariant: 'overshoot',
        detail: `${app}: ${count} live pods, at most ${allowed} allowed`,
        at: Date.now(),
      });
    }
  }

  /** Every invariant of a settled namespace that does not hold now (empty when settled). */
  unsettled(): Violation[] {
    const out: Violation[] = [];
    const uids = new Set<string>();
    for (const app of this.apps()) {
      uids.add(app.metadata.uid as string);
      if (!app.metadata.deletionTimestamp) out.push(...this.#check(app).problems);
    }
    for (const pod of this.#pods.store.list()) {
      if (pod.metadata.labels?.[LABELS.managedBy] !== MANAGED_BY || pod.metadata.deletionTimestamp) continue;
      const owner = pod.metadata.ownerReferences?.find((r) => r.controller)?.uid;
      if (!owner || !uids.has(owner))
        out.push({ invariant: 'orphan', detail: `pod ${pod.metadata.name} has no existing controller owner` });
    }
    return out;
  }

  /**
   * Whether what is left is the nodes' part: every AppService not settled has all its pods, some not yet Ready, and
   * its status already says so (it matches the pods as they are) — the operator has done what it can until a node
   * reports.
   */
  waitingOnNodes(): boolean {
    let waiting = false;
    for (const app of this.apps()) {
      if (app.metadata.deletionTimestamp) continue;
      const c = this.#check(app);
      if (c.problems.length === 0) continue;
      if (c.unready === 0 || !c.statusMatchesPods || !c.allCreated) return false;
      waiting = true;
    }
    return waiting;
  }

  #check(app: AppService): {
    problems: Violation[];
    unready: number;
    statusMatchesPods: boolean;
    allCreated: boolean;
  } {
    const problems: Violation[] = [];
    const name = app.metadata.name as string;
    const want = app.spec.replicas ?? 1;
    const pods = this.#pods.store.byIndex('controller', app.metadata.uid as string).filter(live);
    const wrong = (detail: string) => problems.push({ invariant: 'not-settled', detail: `${name}: ${detail}` });
    if (pods.length !== want) wrong(`${pods.length} live pods, want ${want}`);
    const stale = pods.filter((p) => p.spec?.containers[0]?.image !== app.spec.image);
    if (stale.length > 0) wrong(`${stale.length} pods not on image ${app.spec.image}`);
    const unready = pods.filter((p) => !ready(p)).length;
    if (unready > 0) wrong('pods not ready');
    const s = app.status;
    const names = pods.map((p) => p.metadata.name as string).sort();
    const status = (detail: string) => problems.push({ invariant: 'status', detail: `${name}: ${detail}` });
    const current = s?.observedGeneration === app.metadata.generation;
    if (!current) status(`observedGeneration ${s?.observedGeneration} ≠ generation ${app.metadata.generation}`);
    if (s?.replicas !== pods.length || s?.readyReplicas !== pods.length || s?.updatedReplicas !== pods.length)
      status(`status replicas ${s?.replicas}/${s?.readyReplicas}/${s?.updatedReplicas}, pods ${pods.length}`);
    const sameNames = JSON.stringify(s?.podNames ?? []) === JSON.stringify(names);
    if (!sameNames) status('status.podNames ≠ the live pods');
    const statusMatchesPods =
      current && sameNames && s?.replicas === pods.length && s?.readyReplicas === pods.length - unready;
    return { problems, unready, statusMatchesPods, allCreated: pods.length === want };
  }
}

/** How `cached` differs from `live` (by name and resourceVersion): the first difference, or undefined if none. */
export function stalePart(
  cached: readonly { metadata: { name?: string; resourceVersion?: string } }[],
  live: readonly { metadata: { name?: string; resourceVersion?: string } }[],
): string | undefined {
  const have = new Map(cached.map((o) => [o.metadata.name, o.metadata.resourceVersion]));
  for (const o of live) {
    const rv = have.get(o.metadata.name);
    if (rv === undefined) return `${o.metadata.name} not seen yet`;
    if (rv !== o.metadata.resourceVersion)
      return `${o.metadata.name} seen at resourceVersion ${rv}, now ${o.metadata.resourceVersion}`;
    have.delete(o.metadata.name);
  }
  const [gone] = have.keys();
  return gone === undefined ? undefined : `${gone} deleted, still seen`;
}
