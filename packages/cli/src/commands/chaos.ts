/**
 * @module commands/chaos
 * `opkit chaos`: the project's operator under faults (`runChaos` of `@opkit/testenv/chaos`), as it ships: its CRDs
 * (config/crd/bases), its RBAC (config/rbac), two replicas of `node src/main.ts` with leader election (or three
 * sharded, with config/sharding's RBAC, when `--sharding` or the project's install says so), on a local control plane
 * of its own; a fleet operator's member clusters too (`--members`, or config/fleet). Scenarios and invariants: the samples and `test/chaos/*.ts` (`projectChaos`).
 *
 * Before anything starts, the project must load: `node src/main.ts --help` must exit 0 (a project that does not
 * build is its own error, never the operator's violation), and every scenario is checked (chaos/scenario).
 * Prints a progress line per run, then the report; `--json FILE` writes it as JSON too. Exits 1 when it found a
 * violation, 0 when not, 2 for a usage error.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parseDuration } from '@opkit/runtime/manager';
import {
  checkReplay,
  FAULT_KINDS,
  type FaultKind,
  formatReport,
  projectChaos,
  reportJson,
  runChaos,
  violations,
} from '@opkit/testenv/chaos';
import { CliError } from '../errors.ts';
import { readProject } from '../project/project.ts';

export const CHAOS_HELP = `Usage: opkit chaos [--dir DIR] [--budget DUR] [--trials N] [--seed N] [--faults LIST]
                   [--trial ID]... [--no-generated] [--sharding] [--members N] [--json FILE]

Runs the operator (node src/main.ts, two replicas with leader election, its CRDs and RBAC from config/) on a local
control plane, drives scenarios (config/samples: applied, edited, deleted; per kind, changes generated within its
schema; test/chaos/*.ts), and puts one fault into each trial. After every step it checks that the operator settles, that every object has one controller, that
deleting an owner leaves no orphans, that the children and status match a fault-free run, that only the leader
writes, that no replica crash-loops, and your invariants. Exits 1 on a violation, with a command that replays it.

Options:
  --budget DUR    the whole run's time, control plane included (default 5m)
  --trials N      at most N trials (default: as many as the budget allows)
  --seed N        the order of the trials and the generated changes (default: from the clock; the report
                  gives it)
  --faults LIST   comma-separated, of ${FAULT_KINDS.join(', ')} (default: all)
  --trial ID      run only this trial (an id from a report, e.g. samples:2:crash@1); repeatable
  --settle DUR    how long the operator and the namespace must be quiet to count as settled (default 2s)
  --no-generated  no generated scenarios (by default each kind gets one: its sample, then one spec property
                  changed per step to a value its schema and rules allow, checked offline; the seed picks them)
  --sharding      run three replicas sharded, with config/sharding's RBAC; each write is judged against the
                  fence of its object's shard (default: when config/default includes ../sharding)
  --members N     run a fleet operator with N member clusters, each with config/fleet's RBAC; each replica
                  finds their kubeconfigs in the folder FLEET_KUBECONFIG_DIR names (default: 2 when the project
                  has config/fleet/member-rbac.yaml, else none)
  --json FILE     write the report as JSON too
  --dir DIR       the project (default: the current directory)

docs/chaos.md: the faults, the invariants, writing scenarios and invariants, replaying a trial.
`;

/** Refuses a project that does not load: `node src/main.ts --help` must exit 0. */
function checkLoads(dir: string): void {
  const main = join(dir, 'src', 'main.ts');
  if (!existsSync(main)) throw new CliError('Usage', `${main} not found: opkit chaos runs the operator's src/main.ts`);
  const r = spawnSync(process.execPath, [main, '--help'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0)
    throw new CliError(
      'OperatorDoesNotStart',
      `the operator does not start (node src/main.ts --help exited ${r.status ?? r.signal}); fix it before a chaos run:\n${`${r.stderr}${r.stdout}`.trim().split('\n').slice(0, 20).join('\n')}`,
    );
}

function options(argv: readonly string[]) {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowNegative: true,
    options: {
      dir: { type: 'string', default: '.' },
      budget: { type: 'string', default: '5m' },
      trials: { type: 'string' },
      seed: { type: 'string' },
      faults: { type: 'string' },
      trial: { type: 'string', multiple: true },
      settle: { type: 'string', default: '2s' },
      sharding: { type: 'boolean' },
      members: { type: 'string' },
      generated: { type: 'boolean', default: true },
      json: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const count = (flag: string, v: string | undefined, min: number) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min)
      throw new CliError('Usage', `--${flag}: "${v}" is not a whole number ≥ ${min}`);
    return n;
  };
  const duration = (flag: string, v: string) => {
    try {
      return parseDuration(v, `--${flag}`);
    } catch (e) {
      throw new CliError('Usage', (e as Error).message);
    }
  };
  const faults = values.faults?.split(',').map((f) => f.trim());
  const unknown = faults?.filter((f) => !FAULT_KINDS.includes(f as FaultKind)) ?? [];
  if (unknown.length > 0)
    throw new CliError('Usage', `--faults: unknown ${unknown.join(', ')}; the faults are ${FAULT_KINDS.join(', ')}`);
  return {
    help: values.help,
    dir: resolve(values.dir),
    budgetMs: duration('budget', values.budget),
    settleMs: duration('settle', values.settle),
    trials: count('trials', values.trials, 1),
    seed: count('seed', values.seed, 0),
    faults: faults as FaultKind[] | undefined,
    only: values.trial ?? [],
    json: values.json,
    sharding: values.sharding,
    members: count('members', values.members, 0),
    generated: values.generated,
  };
}

/** Runs `opkit chaos` (see the module comment); resolves to the exit code. */
export async function chaosCommand(argv: readonly string[], out: (line: string) => void): Promise<number> {
  const o = options(argv);
  if (o.help) {
    out(CHAOS_HELP);
    return 0;
  }
  const { dir } = o;
  await readProject(dir);
  // the seed is chosen first: it picks the generated scenarios' changes as well as the trials
  const seed = o.seed ?? Date.now() % 2_147_483_647;
  const project = await projectChaos(dir, {
    ...(o.sharding !== undefined ? { sharding: o.sharding } : {}),
    ...(o.members !== undefined ? { members: o.members } : {}),
    ...(o.generated ? { generated: { seed, log: (l: string) => out(`  ${l}`) } } : {}),
  });
  const { scenarios } = project;
  checkReplay(scenarios, o.only);
  checkLoads(dir);
  const replay = o.only.length > 0 ? ` (replaying ${o.only.join(', ')})` : '';
  out(
    `▶ opkit chaos: ${scenarios.length} ${scenarios.length === 1 ? 'scenario' : 'scenarios'}${replay}; starting a control plane and ${project.sharding ? 'three sharded replicas' : 'two replicas'}${project.members ? `, with ${project.members.count} member clusters` : ''}`,
  );
  const report = await runChaos({
    ...project,
    budgetMs: o.budgetMs,
    settleMs: o.settleMs,
    ...(o.trials !== undefined ? { trials: o.trials } : {}),
    seed,
    ...(o.faults ? { faults: o.faults } : {}),
    only: o.only,
    progress: (l) => out(`  ${l}`),
  });
  out(formatReport(report));
  if (o.json) await writeFile(resolve(o.json), reportJson(report));
  return violations(report).length > 0 ? 1 : 0;
}
