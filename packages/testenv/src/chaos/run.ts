/**
 * @module chaos/run
 * `runChaos`: an operator's chaos run. It starts the system under test (chaos/system: a control plane, the
 * operator's CRDs and RBAC, two replicas with leader election through fault proxies, or three sharded; for a fleet
 * operator, its member clusters too: chaos/members), runs each scenario once without
 * a fault (its **fault-free run**: the write points, the children and statuses the trials are compared with, and
 * already judged by every invariant that needs no comparison), then the trials chaos/plan makes from those write
 * points, one at a time, each in a namespace of its own, until they are done, `trials` ran or the time `budgetMs`
 * allows is spent (a trial is not started when the time left is less than the slowest fault-free run took, plus a
 * failover). A scenario whose fault-free run broke an invariant gets no trials: its bug needs no fault.
 *
 * Which kinds it reads: the CRDs' kinds (the roots), every kind the operator's roles let it create, and what the
 * built-in controllers make of those (a Deployment's ReplicaSets and Pods, a Job's Pods, …).
 *
 * Guarantees: the report lists every violation with its trial's id, seed, fault, step and the writes of that step,
 * and says how many trials were planned, run and left out for the budget; the same seed plans the same trials; the
 * system is stopped when the run ends, also when it fails (a `ChaosInput` error names the file and step at fault).
 */
import { randomBytes } from 'node:crypto';
import { type CrdInput, type LoadedCrd, loadCrds } from '../crds.ts';
import type { Environment } from '../environment.ts';
import { TestenvError } from '../errors.ts';
import { FAULT_KINDS, type Fault, type FaultKind } from './faults.ts';
import type { Manifest } from './objects.ts';
import { type PlannedTrial, parseTrialId, planTrials } from './plan.ts';
import type { ChaosScenario } from './scenario.ts';
import { CHAOS_LEASE, ChaosSystem, type OperatorCommand } from './system.ts';
import { type ChaosInvariant, runTrial, type TrialResult, type TrialSettings, type WatchedKind } from './trial.ts';

/** What `runChaos` runs, and how; every field but the first four has a default. */
export interface ChaosOptions {
  /** The operator's command (e.g. `node src/main.ts` in the project). */
  readonly operator: OperatorCommand;
  /** The project's CRDs (`config/crd/bases`, or objects). */
  readonly crds: readonly CrdInput[];
  /** The operator's ServiceAccount, roles and bindings (`config/rbac`). */
  readonly rbac: readonly Manifest[];
  /** Its webhook configurations (`config/webhook`), served by the replicas behind a loopback Service. */
  readonly webhooks?: readonly Manifest[];
  /** What to do to the cluster: each one runs fault-free first, then in trials. */
  readonly scenarios: readonly ChaosScenario[];
  /** Checked after every step of every run, with the built-in invariants. */
  readonly invariants?: readonly ChaosInvariant[];
  /** Default: all (`FAULT_KINDS`). */
  readonly faults?: readonly FaultKind[];
  /** Run at most this many trials (default: as many as the budget allows). */
  readonly trials?: number;
  /** The seed of the trials' order (default: from the clock; the report gives it). */
  readonly seed?: number;
  /** The whole run's time, control plane included (default 5 minutes). */
  readonly budgetMs?: number;
  /**
   * Run only these trials (ids from a report: `samples:2:crash@1`, after the fault-free run of their scenario; or
   * `samples:fault-free`, that run alone), for a replay. An id that names no scenario is a `ChaosInput` error.
   */
  readonly only?: readonly string[];
  /** How long the operator and the trial's namespace must be quiet to count as settled (default 2 s). */
  readonly settleMs?: number;
  /** How long a step may take to settle (default 30 s). */
  readonly convergeTimeoutMs?: number;
  /** Status fields that differ between correct runs (dotted paths, `status.lastScheduleTime`). */
  readonly ignoreFields?: readonly string[];
  /** Default 2, or 3 when sharded. */
  readonly replicas?: number;
  /**
   * Run the operator sharded (`SHARDING=true`; the RBAC must hold config/sharding's): every replica reconciles the
   * shards it holds, and `shard-owner-only` judges the writes against the shards' fences instead of `leader-only`.
   */
  readonly sharding?: boolean;
  /** A control plane to run on, left running (default: one of its own, stopped at the end). */
  readonly environment?: Environment;
  /**
   * A fleet operator's member clusters (chaos/members): how many (control planes of their own), and the RBAC it holds
   * in each (`config/fleet/member-rbac.yaml`). Each replica finds them in the folder `FLEET_KUBECONFIG_DIR` names;
   * the trials add `member-away` and `member-down`, and compare each member's objects with the fault-free run's.
   */
  readonly members?: { readonly count: number; readonly rbac: readonly Manifest[] };
  /** One line per run as it ends. */
  readonly progress?: (line: string) => void;
  /** The control plane's start-up lines. */
  readonly log?: (line: string) => void;
}

/** A run's outcome, for the report. */
export interface ChaosReport {
  /** The seed the trials were planned with. */
  readonly seed: number;
  /** The fault kinds planned. */
  readonly faults: readonly FaultKind[];
  /** The fault-free run of each scenario. */
  readonly faultFree: readonly TrialResult[];
  /** The trials run, in order. */
  readonly trials: readonly TrialResult[];
  /** Trials planned in all, and those left out because the budget or `trials` ran out. */
  readonly planned: number;
  /** Trials planned but not run: the budget or `trials` ran out. */
  readonly leftOut: number;
  /** Scenarios without trials because their fault-free run broke an invariant. */
  readonly noTrials: readonly string[];
  /** The whole run, control plane included. */
  readonly durationMs: number;
  /** Whether the operator ran sharded. */
  readonly sharded: boolean;
  /** How many member clusters it ran with (0: none). */
  readonly members: number;
}

/** Kinds the built-in controllers make of a kind an operator creates: `group/plural` → its descendants. */
const BUILT_IN_DESCENDANTS: Readonly<Record<string, readonly string[]>> = {
  'apps/deployments': ['apps/replicasets', '/pods'],
  'apps/replicasets': ['/pods'],
  'apps/statefulsets': ['/pods', 'apps/controllerrevisions'],
  'apps/daemonsets': ['/pods', 'apps/controllerrevisions'],
  'batch/jobs': ['/pods'],
  'batch/cronjobs': ['batch/jobs', '/pods'],
};

interface Rule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly verbs?: readonly string[];
}

/**
 * The kinds a trial reads (see the module comment); `descendants` false: only those the roles let the operator create
 * (in a member, whose built-in controllers' objects have random names).
 */
async function watchedKinds(
  system: ChaosSystem,
  crds: readonly LoadedCrd[],
  rbac: readonly Manifest[],
  descendants = true,
) {
  const kinds: WatchedKind[] = [];
  const seen = new Set<string>();
  const add = (k: WatchedKind) => {
    if (!seen.has(`${k.apiVersion}/${k.kind}`)) kinds.push(k);
    seen.add(`${k.apiVersion}/${k.kind}`);
  };
  for (const crd of crds) {
    const { spec } = crd.object as {
      spec: { group: string; names: { kind: string; plural: string }; versions: { name: string; storage?: boolean }[] };
    };
    const version = spec.versions.find((v) => v.storage)?.name ?? spec.versions[0]?.name;
    add({ apiVersion: `${spec.group}/${version}`, kind: spec.names.kind, resource: spec.names.plural, root: true });
  }
  const creatable = new Set<string>();
  for (const role of rbac.filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role'))
    for (const rule of (role.rules as readonly Rule[] | undefined) ?? [])
      if (rule.verbs?.some((v) => v === 'create' || v === '*'))
        for (const g of rule.apiGroups ?? []) for (const r of rule.resources ?? []) creatable.add(`${g}/${r}`);
  if (descendants) for (const c of [...creatable]) for (const d of BUILT_IN_DESCENDANTS[c] ?? []) creatable.add(d);
  for (const c of creatable) {
    const [group = '', plural = ''] = c.split('/');
    if (plural.includes('*') || plural.includes('/') || ['events', 'leases'].includes(plural)) continue;
    const found = await system.objects.resource(group, plural);
    if (found !== undefined) add({ ...found, resource: plural, root: false });
  }
  return kinds;
}

/** Runs the operator under chaos; see the module comment. */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  checkReplay(options.scenarios, options.only ?? []);
  // read and checked once: the system installs them and finds their conversions, the trials read their kinds
  const crds = await loadCrds(options.crds);
  const system = await ChaosSystem.start({
    operator: options.operator,
    crds: crds.map((c) => c.object),
    rbac: options.rbac,
    ...(options.replicas ? { replicas: options.replicas } : {}),
    ...(options.sharding ? { sharding: true } : {}),
    ...(options.log ? { log: options.log } : {}),
    ...(options.environment ? { environment: options.environment } : {}),
    ...(options.webhooks ? { webhooks: options.webhooks } : {}),
    ...(options.members ? { members: options.members } : {}),
  });
  try {
    const settings: TrialSettings = {
      kinds: await watchedKinds(system, crds, options.rbac),
      memberKinds: system.fleet ? await watchedKinds(system, [], options.members?.rbac ?? [], false) : [],
      settleMs: options.settleMs ?? 2_000,
      convergeTimeoutMs: options.convergeTimeoutMs ?? 30_000,
      invariants: options.invariants ?? [],
      ignoreFields: options.ignoreFields ?? [],
    };
    return await runAll(system, settings, options, started);
  } finally {
    await system.stop();
  }
}

/** The scenario a replay id names (`samples:2:crash@1`, `samples:fault-free`). */
const scenarioOf = (id: string) => parseTrialId(id)?.scenario ?? id.replace(/:fault-free$/, '');

/** Throws `ChaosInput` for a trial id (of a replay) that names no scenario of `scenarios`. */
export function checkReplay(scenarios: readonly ChaosScenario[], ids: readonly string[]): void {
  for (const id of ids)
    if (!scenarios.some((s) => s.name === scenarioOf(id)))
      throw new TestenvError(
        'ChaosInput',
        `--trial ${id}: no such trial (an id is scenario:step:fault, as a report gives it; scenarios: ${scenarios.map((s) => s.name).join(', ')})`,
      );
}

/** The fault-free runs, then the trials (see the module comment). */
async function runAll(system: ChaosSystem, settings: TrialSettings, options: ChaosOptions, started: number) {
  const seed = options.seed ?? Date.now() % 2_147_483_647;
  const faults = options.faults ?? FAULT_KINDS;
  const progress = options.progress ?? (() => {});
  const only = options.only ?? [];
  // a namespace per run, named for this chaos run too: runs that share a control plane never meet a namespace of another
  const run = randomBytes(3).toString('hex');
  let n = 0;
  const namespace = () => `chaos-${run}-${++n}`;
  const scenarios = options.scenarios.filter((s) => only.length === 0 || only.some((id) => scenarioOf(id) === s.name));
  const faultFree: TrialResult[] = [];
  for (const scenario of scenarios) {
    const id = `${scenario.name}:fault-free`;
    const result = await runTrial(system, settings, { id, scenario, namespace: namespace() });
    faultFree.push(result);
    progress(line(result, faultFree.length, scenarios.length, 'fault-free'));
  }
  const noTrials = faultFree.filter((r) => r.violations.length > 0).map((r) => r.scenario.name);
  const points = faultFree
    .filter((r) => r.violations.length === 0)
    .map((r) => ({
      scenario: r.scenario.name,
      writesPerStep: r.steps.map((s) => s.writes.length),
      memberWritesPerStep: r.steps.map((s) => s.memberWrites ?? 0),
    }));
  const planned: PlannedTrial[] =
    only.length > 0
      ? only.flatMap((id) => {
          const parsed = parseTrialId(id);
          return parsed && !noTrials.includes(parsed.scenario) ? [{ id, ...parsed }] : [];
        })
      : planTrials(points, faults, seed, {
          webhooks: system.webhookService !== undefined,
          members: system.fleet !== undefined,
        });
  const budget = options.budgetMs ?? 300_000;
  const slowest = Math.max(0, ...faultFree.map((r) => r.durationMs)) + 2 * CHAOS_LEASE.durationMs;
  const trials: TrialResult[] = [];
  for (const t of planned) {
    if (trials.length >= (options.trials ?? Number.POSITIVE_INFINITY)) break;
    if (only.length === 0 && Date.now() - started + slowest > budget) break;
    const scenario = scenarios.find((s) => s.name === t.scenario);
    const baseline = faultFree.find((r) => r.scenario.name === t.scenario);
    if (scenario === undefined || baseline === undefined) continue;
    const trial = { id: t.id, scenario, namespace: namespace(), fault: t.fault, baseline };
    trials.push(await runTrial(system, settings, trial));
    progress(line(trials.at(-1) as TrialResult, trials.length, planned.length, 'trial'));
  }
  const leftOut = planned.length - trials.length;
  return {
    seed,
    faults,
    faultFree,
    trials,
    planned: planned.length,
    leftOut,
    noTrials,
    durationMs: Date.now() - started,
    sharded: system.sharded,
    members: system.fleet?.members.length ?? 0,
  };
}

/** `[3/20] trial samples:2:crash@1 ✓ 9.1 s` */
function line(r: TrialResult, i: number, of: number, what: string): string {
  const verdict =
    r.violations.length === 0
      ? '✓'
      : `✗ ${r.violations.length} ${r.violations.length === 1 ? 'violation' : 'violations'}`;
  const unfired = r.fault !== undefined && !r.fired ? ' (the fault did not fire)' : '';
  return `[${i}/${of}] ${what} ${r.id} ${verdict}${unfired} ${(r.durationMs / 1000).toFixed(1)} s`;
}

export type { Fault };
