/**
 * @module chaos/trial
 * One run of a scenario, in a namespace of its own, with or without a fault, judged by the invariants that need
 * nothing from the user, and the user's own. Each step: the change is made (as the user, server-side apply or
 * delete; chaos/settle), the fault (if this is its step) acts, and the step is judged once the operator **settled**:
 * a replica holds the Lease (sharded: every shard's fence is held by a running replica) and has for the settle
 * period, the fault has been over for the settle period, and for the settle period neither the operator wrote to the
 * trial's objects nor did anything in the namespace change (a pod's status from its node, a Job's from its
 * controller: what the operator may still react to). After a delete, the garbage collector gets up to 20 s to remove
 * the owner's descendants.
 * Then:
 * - `change-accepted`: the apiserver took the step's change within the time a step may take (an answer that may
 *   pass when tried again, such as a webhook of the operator that does not answer, is tried again meanwhile);
 * - `settles`: the operator settled within the time allowed (30 s from the change, or from the end of the fault's
 *   actions, such as a restart of the apiserver) (else: the objects it kept writing, or that no replica led;
 *   the run ends with that step, as what follows would only repeat it);
 * - `bounded-events`: in the window it was judged quiet in, the operator did not keep recording Events (5 or more);
 * - `status-caught-up`: a status with `observedGeneration` has the object's `generation`;
 * - `one-controller`: no object has two controller references;
 * - `no-orphans`: no descendant outlived a root that is gone, at any depth (a Job's pods too);
 * - `same-children`, `same-status`: the children by role, and each root's status, match the fault-free run's;
 * - `same-member-objects` (a fleet operator's run): each member's objects in the namespace (of the kinds the
 *   members' RBAC lets it create) match the fault-free run's, in labels, annotations, owners, finalizers and all
 *   but their metadata and status (chaos/members);
 * - the user's invariants.
 * Over the whole trial: `leader-only` (no replica wrote while another held the Lease, after 1 s of slack for the
 * watch that sees the Lease; sharded, `shard-owner-only`: no replica wrote to an object while another held the fence
 * of its shard), `no-crash-loop` (no replica exited by itself twice; in the fault-free run, not once),
 * `token-not-logged` (no replica printed its ServiceAccount token), `rbac-allows` (the authorizer refused no request
 * of a replica: the generated RBAC grants all the operator does, in the hub and in each member).
 *
 * Guarantees: a step the apiserver refuses, or an invariant that throws, is a `ChaosInput` error naming the scenario's
 * file and step, never a violation; the trial's namespace is deleted after it, whatever happened.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TestenvError } from '../errors.ts';
import { statusBehind } from './convergence.ts';
import { compareEndStates, type EndState, endState } from './end-state.ts';
import { type ArmedFault, arm, counts, type Fault } from './faults.ts';
import {
  type ChildShape,
  childShape,
  compareChildren,
  describeObject,
  Lineage,
  type LineageViolation,
  multipleControllers,
  ownerless,
} from './lineage.ts';
import { compareMembers, memberLines, memberObjects } from './members.ts';
import type { Manifest } from './objects.ts';
import { describeRequest } from './request-info.ts';
import { type ChaosScenario, describeStep, type ScenarioStep } from './scenario.ts';
import { change, settle, waitForLeader } from './settle.ts';
import type { ChaosSystem, OperatorWrite } from './system.ts';
import { crashLoops, leaderOnly, rbacDenied, sameObjects, shardOwnerOnly, tokensLogged } from './verdicts.ts';

/** A kind the trial reads: `root` for the project's own kinds, whose children are compared. */
export interface WatchedKind {
  readonly apiVersion: string;
  readonly kind: string;
  /** Its resource (plural). */
  readonly resource: string;
  readonly root: boolean;
}

/** What an invariant of the user sees after a step. */
export interface InvariantView {
  /** The scenario's name. */
  readonly scenario: string;
  /** The step just judged (0-based), and whether it was the last. */
  readonly step: number;
  /** Whether the step was the scenario's last. */
  readonly last: boolean;
  /** The trial's namespace, where the scenario's namespaced objects are. */
  readonly namespace: string;
  /** The live objects of the watched kinds in the namespace. */
  readonly objects: readonly Manifest[];
  /** The operator's writes of the trial so far (`verb`, `resource`, `name`, … and when; `cluster` for a member's). */
  readonly writes: readonly OperatorWrite[];
  /** A fleet operator's run: the live objects of the members' kinds in the namespace, by member (else none). */
  readonly members: Readonly<Record<string, readonly Manifest[]>>;
}

/** An invariant of the user's: the messages of what is wrong (none when it holds). */
export interface ChaosInvariant {
  /** Its name in the report (`restored-once`). */
  readonly name: string;
  /** The messages of what is wrong after a step (none when it holds); a throw stops the run (`ChaosInput`). */
  check(view: InvariantView): readonly string[] | Promise<readonly string[]>;
}

/** One broken invariant. */
export interface Violation {
  /** Which invariant: `settles`, `same-children`, …, or the name of one of yours. */
  readonly invariant: string;
  /** What it was seen on (`Kind namespace/name`, a replica, a kind). */
  readonly object?: string;
  /** What is wrong, in words. */
  readonly message: string;
  /** The step after which it was seen (0-based); absent for the whole-trial invariants. */
  readonly step?: number;
}

/** What a step did. */
export interface StepResult {
  /** The step in words (`apply Widget demo`). */
  readonly description: string;
  /** The operator's writes of the step, in order: `chaos-0 create pods ns/name`. */
  readonly writes: readonly string[];
  /** Each root's live descendants, counted by role. */
  readonly shape: ChildShape;
  /** Each root's status, normalized for comparison (chaos/end-state). */
  readonly status: EndState;
  /** The live objects without an owner, counted by kind (the roots' children are in `shape`). */
  readonly unowned: ReadonlyMap<string, number>;
  /** A fleet operator's run: each member's objects in the namespace, as compared (chaos/members `memberLines`). */
  readonly members?: Readonly<Record<string, readonly string[]>>;
  /** How many of `writes` were made in a member (what `member-away` and `member-down` are aimed at). */
  readonly memberWrites?: number;
}

/** What a trial did and found. */
export interface TrialResult {
  /** `scenario:step:fault`, or `scenario:fault-free`. */
  readonly id: string;
  /** The scenario it ran. */
  readonly scenario: ChaosScenario;
  /** The namespace it ran in. */
  readonly namespace: string;
  /** The fault (none: a fault-free run). */
  readonly fault?: Fault;
  /** Whether the fault fired (its write point came). */
  readonly fired: boolean;
  /** What each step did, up to the last one run. */
  readonly steps: readonly StepResult[];
  /** What it found, in the order seen. */
  readonly violations: readonly Violation[];
  /** How long it took. */
  readonly durationMs: number;
}

/** How trials run. */
export interface TrialSettings {
  readonly kinds: readonly WatchedKind[];
  /** The kinds read in the member clusters (those the members' RBAC lets the operator create). */
  readonly memberKinds: readonly WatchedKind[];
  readonly settleMs: number;
  readonly convergeTimeoutMs: number;
  readonly invariants: readonly ChaosInvariant[];
  readonly ignoreFields: readonly string[];
}

/** What a trial keeps as it runs. */
export interface TrialState {
  readonly system: ChaosSystem;
  readonly settings: TrialSettings;
  readonly namespace: string;
  readonly scenario: ChaosScenario;
  readonly baseline: TrialResult | undefined;
  readonly lineage: Lineage;
  readonly roots: Map<string, Manifest>;
  /** `Kind name` of each root the scenario deleted so far. */
  readonly deleted: Set<string>;
  readonly violations: Violation[];
  readonly steps: StepResult[];
  readonly firstWrite: number;
  /** Each object's shard (`resource/name` → its `opkit.dev/shard` label), as seen in the steps' objects. */
  readonly shards: Map<string, number>;
}

/** Runs `scenario` in `namespace` with `fault` (none: the fault-free run); see the module comment. */
export async function runTrial(
  system: ChaosSystem,
  settings: TrialSettings,
  run: { id: string; scenario: ChaosScenario; namespace: string; fault?: Fault; baseline?: TrialResult },
): Promise<TrialResult> {
  const started = Date.now();
  const state: TrialState = {
    system,
    settings,
    namespace: run.namespace,
    scenario: run.scenario,
    baseline: run.baseline,
    lineage: new Lineage(),
    roots: new Map(),
    deleted: new Set(),
    violations: [],
    steps: [],
    firstWrite: system.writes.length,
    shards: new Map(),
  };
  const exitsBefore = system.replicas.map((r) => r.exits.length);
  const leaksBefore = system.replicas.map((r) => r.leaks.length);
  const deniedBefore = system.denied.length;
  let fired = false;
  await system.objects.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: run.namespace } }, 'the trial');
  try {
    await waitForLeader(system, settings.convergeTimeoutMs);
    const roots = new Set(settings.kinds.filter((k) => k.root).map((k) => k.resource));
    for (const [i, step] of run.scenario.steps.entries()) {
      const armed = run.fault?.step === i ? arm(system, run.fault, run.namespace, roots) : undefined;
      const settled = await runStep(state, i, step, armed);
      fired ||= armed?.fired === true;
      if (!settled) break; // what follows a step that never settled would only repeat it
    }
  } finally {
    system.hooks = undefined;
    await system.fleet?.back();
    const ns = { apiVersion: 'v1', kind: 'Namespace', name: run.namespace };
    await system.objects.delete(ns, 'the trial').catch(() => {});
    for (const m of system.fleet?.members ?? []) await m.objects.delete(ns, 'the trial').catch(() => {});
  }
  state.violations.push(
    ...(system.sharded
      ? shardOwnerOnly(system, run.namespace, state.firstWrite, state.shards)
      : leaderOnly(system, run.namespace, state.firstWrite)),
    ...crashLoops(system, exitsBefore, run.fault === undefined),
    ...tokensLogged(system, leaksBefore),
    ...(await rbacDenied(system, deniedBefore)),
  );
  for (const r of system.replicas) r.takeLog(); // the output is kept per exit (its tail); the rest is let go
  return {
    id: run.id,
    scenario: run.scenario,
    namespace: run.namespace,
    ...(run.fault ? { fault: run.fault } : {}),
    fired,
    steps: state.steps,
    violations: state.violations,
    durationMs: Date.now() - started,
  };
}

/** The step's object, in the trial's namespace when its kind is namespaced. */
async function inNamespace(state: TrialState, step: ScenarioStep): Promise<ScenarioStep> {
  const o = step.apply ?? step.delete;
  const kind = await state.system.objects.kind(o.apiVersion, o.kind);
  if (!kind?.namespaced) return step;
  return step.apply !== undefined
    ? { apply: { ...step.apply, metadata: { ...step.apply.metadata, namespace: state.namespace } } }
    : { delete: { ...step.delete, namespace: state.namespace } };
}

/** Runs and judges step `i`; resolves to whether the operator settled after it. */
async function runStep(state: TrialState, i: number, step: ScenarioStep, armed: ArmedFault | undefined) {
  const { system } = state;
  const what = `${state.scenario.source ?? state.scenario.name}: scenario "${state.scenario.name}", step ${i + 1} (${describeStep(step)})`;
  const mark = system.writes.length;
  const started = Date.now();
  system.hooks = armed?.hooks;
  const placed = await inNamespace(state, step);
  const accepted = await change(state, placed, what);
  if (accepted !== undefined) {
    armed?.end();
    system.hooks = undefined;
    state.violations.push({ ...accepted, step: i });
    return false;
  }
  armed?.begin();
  const settled = await settle(state, started, mark, armed);
  armed?.end();
  system.hooks = undefined;
  state.violations.push(...settled.violations.map((v) => ({ ...v, step: i })));
  const live = await snapshot(state, step.delete !== undefined);
  const members = system.fleet
    ? await memberObjects(system.fleet, state.settings.memberKinds, state.namespace, CONTROL_PLANE_MADE)
    : {};
  const made = system.writes.slice(mark).filter((w) => counts(w.info, state.namespace));
  const writes = made.map(
    (w) => `chaos-${w.replica} ${w.cluster === undefined ? '' : `in ${w.cluster}: `}${describeRequest(w.info)}`,
  );
  const memberWrites = made.filter((w) => w.cluster !== undefined).length;
  await judge(state, i, { live, members, memberWrites }, writes, what);
  return settled.ok;
}

/** The live objects of the watched kinds; after a delete, after the garbage collector removed the orphans (≤ 20 s). */
async function snapshot(state: TrialState, deleted: boolean): Promise<Manifest[]> {
  const deadline = Date.now() + (deleted ? 20_000 : 0);
  for (;;) {
    const live = (
      await Promise.all(
        state.settings.kinds.map((k) => state.system.objects.list(k.apiVersion, k.kind, state.namespace)),
      )
    ).flat();
    for (const o of live) state.lineage.observe(o);
    if (Date.now() >= deadline || orphaned(state, live).length === 0) return live;
    await sleep(250);
  }
}

async function judge(
  state: TrialState,
  i: number,
  seen: { live: Manifest[]; members: Record<string, Manifest[]>; memberWrites: number },
  writes: string[],
  what: string,
) {
  const { live } = seen;
  const rootKinds = new Set(state.settings.kinds.filter((k) => k.root).map((k) => `${k.apiVersion}/${k.kind}`));
  if (state.system.sharded) noteShards(state, live);
  const roots = live.filter((o) => rootKinds.has(`${o.apiVersion}/${o.kind}`));
  for (const r of roots) if (r.metadata.uid) state.roots.set(r.metadata.uid, r);
  const unowned = new Map<string, number>();
  for (const o of live)
    if ((o.metadata.ownerReferences ?? []).length === 0 && !CONTROL_PLANE_MADE.has(`${o.kind}/${o.metadata.name}`))
      unowned.set(o.kind, (unowned.get(o.kind) ?? 0) + 1);
  const unplaced = roots.map(({ metadata: { namespace: _, ...metadata }, ...r }) => ({ ...r, metadata }));
  const shape = childShape(state.lineage, unplaced, live);
  const status = endState(roots, live, state.settings.ignoreFields);
  const members = Object.fromEntries(
    Object.entries(seen.members).map(([m, objects]) => [m, memberLines(objects, state.namespace)]),
  );
  const found: Omit<Violation, 'step'>[] = [
    ...statusBehind(roots),
    ...multipleControllers(live),
    ...orphaned(state, live),
  ];
  const base = state.baseline?.steps[i];
  if (base !== undefined) {
    found.push(...compareChildren(base.shape, shape));
    found.push(...compareEndStates(base.status, status).map((d) => ({ invariant: 'same-status', ...d })));
    found.push(...sameObjects(base.unowned, unowned));
    if (base.members !== undefined) found.push(...compareMembers(base.members, members));
  }
  const last = i === state.scenario.steps.length - 1;
  const view = {
    scenario: state.scenario.name,
    step: i,
    last,
    namespace: state.namespace,
    objects: live,
    writes: state.system.writes.slice(state.firstWrite),
    members: seen.members,
  };
  for (const inv of state.settings.invariants) {
    let messages: readonly string[];
    try {
      messages = await inv.check(view);
    } catch (err) {
      throw new TestenvError('ChaosInput', `${what}: the invariant "${inv.name}" threw: ${(err as Error).message}`, {
        cause: err,
      });
    }
    found.push(...messages.map((message) => ({ invariant: inv.name, message })));
  }
  // a violation is reported once, after the step that first showed it (an orphan stays one after the next steps too)
  const known = new Set(state.violations.map((v) => `${v.invariant} ${v.object} ${v.message}`));
  for (const v of found)
    if (!known.has(`${v.invariant} ${v.object} ${v.message}`)) state.violations.push({ ...v, step: i });
  const description = describeStep(state.scenario.steps[i] as ScenarioStep);
  const fleet = state.system.fleet ? { members, memberWrites: seen.memberWrites } : {};
  state.steps.push({ description, writes, shape, status, unowned, ...fleet });
}

/** Records the shard label of each object in `live`, by `resource/name`, for `shard-owner-only`. */
function noteShards(state: TrialState, live: readonly Manifest[]): void {
  const resources = new Map(state.settings.kinds.map((k) => [`${k.apiVersion}/${k.kind}`, k.resource]));
  for (const o of live) {
    const shard = (o.metadata.labels as Record<string, string> | undefined)?.[SHARD_LABEL];
    const resource = resources.get(`${o.apiVersion}/${o.kind}`);
    if (shard !== undefined && /^\d+$/.test(shard) && resource !== undefined)
      state.shards.set(`${resource}/${o.metadata.name}`, Number(shard));
  }
}

/**
 * What the controller-manager makes in every namespace, in its own time (later after an apiserver restart): not the
 * operator's, so `same-objects` leaves it out.
 */
const CONTROL_PLANE_MADE: ReadonlySet<string> = new Set(['ConfigMap/kube-root-ca.crt', 'ServiceAccount/default']);

/** The label a sharded operator puts on each object: its shard (docs/sharding.md). */
const SHARD_LABEL = 'opkit.dev/shard';

/** Roots the scenario deleted that still exist, and objects that lost every owner (chaos/lineage). */
function orphaned(state: TrialState, live: readonly Manifest[]): LineageViolation[] {
  const stuck = live
    .filter((o) => state.roots.has(o.metadata.uid ?? '') && state.deleted.has(`${o.kind} ${o.metadata.name}`))
    .map((o) => ({
      invariant: 'no-orphans' as const,
      object: describeObject(o),
      message: `${describeObject(o)} was deleted but still exists (finalizers: ${(o.metadata.finalizers ?? []).join(', ') || 'none'}): a finalizer that never finished?`,
    }));
  return [...stuck, ...ownerless(state.lineage, live)];
}
