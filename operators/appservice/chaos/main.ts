/**
 * `npm run chaos -- [--trials N] [--seed S] [--kinds a,b] [--fuzz N] [--json FILE]`: the reliability and security
 * suite against the AppService operator on a local control plane (chaos/run.ts). `--merge FILE` (repeated) instead
 * combines the JSON reports of earlier runs into one (chaos/report.ts). `--sharded` runs the operator sharded instead
 * (three active replicas, each on its own buckets) with the sharded fault kinds (chaos/shard-run.ts). Prints the
 * report; exits 1 when a goal is missed, 2 on a bad flag or an unreadable report.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { FAULT_KINDS, type FaultKind } from './faults.ts';
import { type ChaosReport, chaosMarkdown, mergeReports } from './report.ts';
import { runChaos } from './run.ts';
import { shardMarkdown } from './shard-report.ts';
import { runShardedChaos } from './shard-run.ts';
import { SHARD_FAULT_KINDS, type ShardFaultKind } from './sharded.ts';

const USAGE = `Usage: npm run chaos -- [--trials N] [--seed S] [--kinds KIND,…] [--fuzz N] [--json FILE]
       npm run chaos -- --merge FILE --merge FILE … [--json FILE]
       npm run chaos -- --sharded [--trials N] [--seed S] [--kinds KIND,…] [--apps N] [--heal H]
                         [--shard-filter F] [--json FILE]

  --sharded    run the operator sharded (--sharding: three active replicas, each on its own buckets, a fourth
               joining and leaving in replica-add) with the sharded fault kinds: ${SHARD_FAULT_KINDS.join(', ')};
               checks every write against the fence Lease of its bucket in the audit log (default: leader election)
  --apps N     sharded: AppServices to start with (default 12)
  --heal H     sharded: how a replica-cutoff heals: reset (default; what the cut-off replica sent is discarded) or
               pass (delivered late, on the same connections)
  --shard-filter F
               sharded: how the replicas select their shards: labels (default) or server (the apiserver's shard
               selectors, its ShardedListAndWatch gate on; an AppService's bucket is its uid's hash)
  --trials N   trials of each fault kind (default 50; sharded 10)
  --seed S     seed of the trials, faults and fuzz bodies (default 1)
  --kinds      fault kinds to run (default all): ${FAULT_KINDS.join(', ')}
               (sharded: ${SHARD_FAULT_KINDS.join(', ')})
               pause, in both modes: a replica that acts (the leader; sharded, one holding buckets) is stopped
               (SIGSTOP) past its lease while the AppServices keep changing, until another takes over, then
               continued (SIGCONT): it must write nothing once continued (audit log), and stop acting within 5 s
  --fuzz N     hostile AppService bodies (default 1000)
  --json FILE  write the figures as JSON
  --merge FILE a JSON report of an earlier run (repeat it): print and write one report over all of them, e.g. of
               runs that split the fault kinds between them (each on its own control plane, at the same time)
`;

function fail(message: string): never {
  process.stderr.write(`chaos: ${message}\n\n${USAGE}`);
  process.exit(2);
}

let values: ReturnType<typeof parse>['values'];
function parse() {
  return parseArgs({
    options: {
      trials: { type: 'string' },
      seed: { type: 'string' },
      kinds: { type: 'string' },
      fuzz: { type: 'string' },
      json: { type: 'string' },
      merge: { type: 'string', multiple: true },
      sharded: { type: 'boolean', default: false },
      apps: { type: 'string' },
      heal: { type: 'string' },
      'shard-filter': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
}
try {
  values = parse().values;
} catch (err) {
  fail((err as Error).message);
}
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const DEFAULTS = { trials: values.sharded ? '10' : '50', seed: '1', fuzz: '1000', apps: '12' } as const;
const whole = (name: 'trials' | 'seed' | 'fuzz' | 'apps', min: number) => {
  const v = Number(values[name] ?? DEFAULTS[name]);
  if (!Number.isInteger(v) || v < min) fail(`--${name} must be a whole number ≥ ${min}, got "${values[name]}"`);
  return v;
};
async function readReport(file: string): Promise<ChaosReport> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    fail(`--merge: cannot read ${file}: ${(err as Error).message}`);
  }
  let r: Partial<ChaosReport>;
  try {
    r = JSON.parse(text) as Partial<ChaosReport>;
  } catch (err) {
    fail(`--merge: ${file} is not JSON: ${(err as Error).message}`);
  }
  const isArray = Array.isArray;
  const isNumber = (x: unknown) => typeof x === 'number';
  const isObject = (x: unknown) => typeof x === 'object' && x !== null;
  const sec = r?.security;
  const shape: [string, unknown, (x: unknown) => boolean][] = [
    ['seeds', r?.seeds, isArray],
    ['results', r?.results, isArray],
    ['violations', r?.violations, isArray],
    ['fuzzCrashes', r?.fuzzCrashes, isNumber],
    ['fuzzOutcomes', r?.fuzzOutcomes, isObject],
    ['fuzzRefusedUnnamed', r?.fuzzRefusedUnnamed, isArray],
    ['fuzzNotReconciled', r?.fuzzNotReconciled, isArray],
    ['startup', r?.startup, isArray],
    ['security.forbidden', sec?.forbidden, isNumber],
    ['security.forbiddenWhileApiserverRestarted', sec?.forbiddenWhileApiserverRestarted, isNumber],
    ['security.forbiddenRequests', sec?.forbiddenRequests, isArray],
    ['security.unusedPermissions', sec?.unusedPermissions, isArray],
    ['security.secretsLogged', sec?.secretsLogged, isArray],
    ['security.restrictedAdmission', sec?.restrictedAdmission, isObject],
    ['security.npmAudit', sec?.npmAudit, isObject],
  ];
  const bad = shape.find(([, value, ok]) => !ok(value))?.[0];
  if (bad)
    fail(
      `--merge: ${file} is not a chaos report ("${bad}" is missing or of the wrong type); pass files written by --json`,
    );
  return r as ChaosReport;
}

async function run(): Promise<ChaosReport> {
  if (values.merge) {
    const flag = (['trials', 'seed', 'kinds', 'fuzz'] as const).find((k) => values[k] !== undefined);
    if (flag) fail(`--${flag} runs trials; --merge only combines reports, so leave one of them out`);
    return mergeReports(await Promise.all(values.merge.map(readReport)));
  }
  const kinds = values.kinds?.split(',').map((k) => k.trim());
  const unknown = kinds?.find((k) => !(FAULT_KINDS as readonly string[]).includes(k));
  if (unknown) fail(`--kinds: unknown fault kind "${unknown}"`);

  return runChaos({
    trials: whole('trials', 0),
    seed: whole('seed', 0),
    fuzz: whole('fuzz', 0),
    ...(kinds ? { kinds: kinds as FaultKind[] } : {}),
    log: (line) => process.stderr.write(`[chaos] ${line}\n`),
  });
}

async function runSharded() {
  const flag = (['merge', 'fuzz'] as const).find((k) => values[k] !== undefined);
  if (flag) fail(`--${flag} does not apply to --sharded`);
  const kinds = values.kinds?.split(',').map((k) => k.trim());
  const unknown = kinds?.find((k) => !(SHARD_FAULT_KINDS as readonly string[]).includes(k));
  if (unknown) fail(`--kinds: unknown sharded fault kind "${unknown}"`);
  const heal = values.heal ?? 'reset';
  if (heal !== 'reset' && heal !== 'pass') fail(`--heal must be reset or pass, got "${heal}"`);
  const filter = values['shard-filter'] ?? 'labels';
  if (filter !== 'labels' && filter !== 'server') fail(`--shard-filter must be labels or server, got "${filter}"`);
  return runShardedChaos({
    heal,
    filter,
    trials: whole('trials', 0),
    seed: whole('seed', 0),
    apps: whole('apps', 1),
    ...(kinds ? { kinds: kinds as ShardFaultKind[] } : {}),
    log: (line) => process.stderr.write(`[chaos] ${line}\n`),
  });
}

const shardedOnly = (['apps', 'heal', 'shard-filter'] as const).find((k) => values[k] !== undefined);
if (!values.sharded && shardedOnly) fail(`--${shardedOnly} applies to --sharded only`);
const [report, text] = values.sharded
  ? await runSharded().then((r) => [r, shardMarkdown(r)] as const)
  : await run().then((r) => [r, chaosMarkdown(r)] as const);
process.stdout.write(`${text}\n`);
if (values.json) {
  await mkdir(dirname(values.json), { recursive: true });
  await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
}
process.exit(report.passed ? 0 : 1);
