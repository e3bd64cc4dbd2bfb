/**
 * `npm run bench -- <scenario> [--repeat N] [--json FILE]`: runs a benchmark scenario, prints a Markdown table and
 * writes the figures as JSON. Scenarios: env-start, informer, converge, compare, restart-limit, webhook, shard, suites
 * (see USAGE).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import {
  compareMarkdown,
  compareScenario,
  SCENARIOS,
  type ScenarioName,
  SYSTEMS,
  writeDocs,
} from './scenarios/compare.ts';
import { type ConvergeResult, convergeScenario, type SystemName } from './scenarios/converge.ts';
import { envStart, envStartMarkdown } from './scenarios/env-start.ts';
import { type InformerResult, informerScenario } from './scenarios/informer.ts';
import { limitsMarkdown, limitsScenario } from './scenarios/limits.ts';
import { restartLimitMarkdown, restartLimitScenario } from './scenarios/restart-limit.ts';
import { schemaImportMarkdown, schemaImportScenario } from './scenarios/schema-import.ts';
import { type ShardResult, shardMarkdown, shardScenario } from './scenarios/shard.ts';
import { suitesMarkdown, suitesScenario } from './scenarios/suites.ts';
import { webhookMarkdown, webhookScenario } from './scenarios/webhook.ts';

const USAGE = `Usage: npm run bench -- <scenario> [--repeat N] [--json FILE]

Scenarios:
  env-start   warm start time and memory of the local control plane, and the recorded cold build time
  schema-import
              what importing the built-in types' schemas adds to an operator's start-up (the runtime compiled as
              published): import time and RSS, against @opkit/runtime alone, --repeat N processes each
  informer    opkit's informer vs @kubernetes/client-node's: sync time, heap per object, CPU per event (--objects N)
  converge    the AppService operator from zero: --crs N --replicas R [--workers W] [--idle-seconds S]
  compare     opkit vs Go controller-runtime vs kubernetes-fluent-client vs client-node vs the floor, side by side,
              --repeat N, --docs
              --scenario NAME (repeatable; default all): converge, churn, idle, restart, scale
              --system NAME (repeatable; default all): opkit, go, kfc, clientNode, floor
              converge: --crs N (1000) --replicas R (3) --idle-seconds S (60)
              churn:    --churn-crs N (2000) --rates A,B,… changes/s swept upward (10,25,50,100,200)
                        --churn-seconds S per rate (20)
              idle, restart (one run per system): --steady-crs N (3000) --steady-pods P (10000)
                        --steady-idle-seconds S (300) --restarts K (3)
              scale:    --sizes A,B,C cached pods (1000,10000,30000)
              all: --workers W (4)
  limits      the operator inside kubebuilder's default resources: opkit and Go controller-runtime each alone in a
              memory cgroup (--limit-mib M, 128, no swap) converging --crs N (1000) AppServices × --replicas R (3)
              pods, then --rest-seconds S (30) at rest: converge time, peak and resting RSS, limit hits, OOM
              kills; --repeat N runs each in rotating order
  restart-limit
              restart to synced: opkit, Go controller-runtime and a bare Node process doing only the lists, the watch
              and one status write (the limit), --repeat N rounds in rotating order, with --steady-crs N (3000)
              AppServices and --steady-pods P (10000) pods
  webhook     a validating webhook through the apiserver, opkit vs Go controller-runtime, at rising rates:
              --rates A,B,C req/s (50,100,200,400) --rate-seconds S (10), --repeat N
  shard       the operator split over N active replicas (--sharding) against one, on the converge workload, each
              replica count on a fresh control plane: --replicas A,B,C replica counts (1,2,3), --crs N (1000)
              --pods-per-cr P (10), --workers W per replica (4), --repeat N; with 1 among the counts, a sharded
              1-replica run too (--no-sharded-single: only the default mode); --shard-selectors: each sharded
              run also with the apiserver's shard selectors (its ShardedListAndWatch gate on); the JSON is written after each
              run, and --resume keeps the runs already in it (same workload) instead of making them again
  suites      a user's test suite against its anchor: the kubebuilder book's CronJob tutorial tests
              (go test ./internal/..., envtest) and their opkit port's npm test (bench/peers/opkit-cronjob),
              alternating, warm: --kubebuilder DIR (a kubebuilder checkout's
              docs/book/src/cronjob-tutorial/testdata/project), --repeat N
`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  allowNegative: true,
  options: {
    json: { type: 'string' },
    repeat: { type: 'string', default: '3' },
    objects: { type: 'string', default: '10000' },
    crs: { type: 'string', default: '1000' },
    // pods per AppService for converge and compare (default 3); replica counts for shard (default 1,2,3)
    replicas: { type: 'string' },
    'pods-per-cr': { type: 'string', default: '10' },
    'sharded-single': { type: 'boolean', default: true },
    'shard-selectors': { type: 'boolean', default: false },
    resume: { type: 'boolean', default: false },
    workers: { type: 'string', default: '4' },
    'idle-seconds': { type: 'string', default: '60' },
    docs: { type: 'boolean', default: false },
    scenario: { type: 'string', multiple: true },
    'churn-crs': { type: 'string', default: '2000' },
    rates: { type: 'string' },
    'churn-seconds': { type: 'string', default: '20' },
    system: { type: 'string', multiple: true },
    'steady-crs': { type: 'string', default: '3000' },
    'steady-pods': { type: 'string', default: '10000' },
    'steady-idle-seconds': { type: 'string', default: '300' },
    restarts: { type: 'string', default: '3' },
    sizes: { type: 'string', default: '1000,10000,30000' },
    'rate-seconds': { type: 'string', default: '10' },
    'limit-mib': { type: 'string', default: '128' },
    'rest-seconds': { type: 'string', default: '30' },
    kubebuilder: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
const scenario = positionals[0];
if (values.help || !scenario) {
  process.stdout.write(USAGE);
  process.exit(values.help ? 0 : 2);
}
const repeat = Number(values.repeat);
if (!Number.isInteger(repeat) || repeat < 1) {
  process.stderr.write(`bench: --repeat must be a whole number ≥ 1, got "${values.repeat}"\n`);
  process.exit(2);
}
function fail(message: string): never {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}
type WholeOption =
  | 'crs'
  | 'replicas'
  | 'workers'
  | 'idle-seconds'
  | 'churn-crs'
  | 'churn-seconds'
  | 'steady-crs'
  | 'steady-pods'
  | 'steady-idle-seconds'
  | 'restarts'
  | 'pods-per-cr'
  | 'limit-mib'
  | 'rest-seconds';
function whole(name: WholeOption, min: number): number {
  const v = Number(values[name] ?? (name === 'replicas' ? '3' : undefined));
  if (!Number.isInteger(v) || v < min) fail(`--${name} must be a whole number ≥ ${min}, got "${values[name]}"`);
  return v;
}
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

let result: unknown;
let table: string;
switch (scenario) {
  case 'suites': {
    if (!values.kubebuilder)
      fail("suites needs --kubebuilder DIR: a kubebuilder checkout's docs/book/src/cronjob-tutorial/testdata/project");
    const r = await suitesScenario({ kubebuilder: values.kubebuilder, repeat, log });
    result = r;
    table = suitesMarkdown(r);
    break;
  }
  case 'schema-import': {
    const r = await schemaImportScenario({ repeat, log });
    result = r;
    table = schemaImportMarkdown(r);
    break;
  }
  case 'env-start': {
    const r = await envStart({ repeat, log });
    result = r;
    table = envStartMarkdown(r);
    break;
  }
  case 'informer': {
    const objects = Number(values.objects);
    if (!Number.isInteger(objects) || objects < 1) {
      process.stderr.write(`bench: --objects must be a whole number ≥ 1, got "${values.objects}"\n`);
      process.exit(2);
    }
    const r = await informerScenario({ objects, repeat, log });
    result = r;
    table = informerMarkdown(r);
    break;
  }
  case 'limits': {
    const r = await limitsScenario({
      crs: whole('crs', 1),
      replicas: whole('replicas', 1),
      limitMiB: whole('limit-mib', 32),
      restSeconds: whole('rest-seconds', 0),
      repeat,
      workers: whole('workers', 1),
      log,
    });
    result = r;
    table = limitsMarkdown(r);
    break;
  }
  case 'restart-limit': {
    const r = await restartLimitScenario({
      crs: whole('steady-crs', 1),
      pods: whole('steady-pods', 1),
      rounds: repeat,
      workers: whole('workers', 1),
      log,
    });
    result = r;
    table = restartLimitMarkdown(r);
    break;
  }
  case 'webhook': {
    const rates = (values.rates ?? '50,100,200,400').split(',').map(Number);
    if (rates.some((n) => !Number.isInteger(n) || n < 1))
      fail(`--rates must be whole numbers ≥ 1 separated by commas, got "${values.rates}"`);
    const seconds = Number(values['rate-seconds']);
    if (!Number.isInteger(seconds) || seconds < 1) fail(`--rate-seconds must be a whole number ≥ 1`);
    const r = await webhookScenario({ rates, seconds, repeat, log });
    result = r;
    table = webhookMarkdown(r);
    break;
  }
  case 'converge': {
    const r = await convergeScenario({
      system: 'opkit',
      crs: whole('crs', 1),
      replicas: whole('replicas', 0),
      workers: whole('workers', 1),
      idleSeconds: whole('idle-seconds', 0),
      log,
    });
    result = r;
    table = convergeMarkdown(r);
    break;
  }
  case 'shard': {
    const counts = (values.replicas ?? '1,2,3').split(',').map(Number);
    if (counts.some((n) => !Number.isInteger(n) || n < 1))
      fail(`--replicas must be whole numbers ≥ 1 separated by commas, got "${values.replicas}"`);
    const workload = { crs: whole('crs', 1), podsPerCR: whole('pods-per-cr', 1), workers: whole('workers', 1) };
    const r = await shardScenario({
      replicaCounts: [...new Set(counts)].sort((a, b) => a - b),
      shardedSingle: values['sharded-single'],
      shardSelectors: values['shard-selectors'],
      ...workload,
      repeat,
      log,
      ...(values.resume && values.json ? { done: await shardRunsIn(values.json, workload) } : {}),
      ...(values.json ? { checkpoint: (partial) => writeJson(values.json as string, partial) } : {}),
    });
    result = r;
    table = shardMarkdown(r);
    break;
  }
  case 'compare': {
    const scenarios = (values.scenario ?? [...SCENARIOS]) as ScenarioName[];
    const unknown = scenarios.find((s) => !(SCENARIOS as readonly string[]).includes(s));
    if (unknown) fail(`--scenario must be one of ${SCENARIOS.join(', ')}, got "${unknown}"`);
    const systems = values.system as SystemName[] | undefined;
    const odd = systems?.find((s) => !(SYSTEMS as readonly string[]).includes(s));
    if (odd) fail(`--system must be one of ${SYSTEMS.join(', ')}, got "${odd}"`);
    const sizes = (values.sizes ?? '').split(',').map(Number);
    if (sizes.some((n) => !Number.isInteger(n) || n < 1))
      fail(`--sizes must be whole numbers ≥ 1 separated by commas, got "${values.sizes}"`);
    const rates = (values.rates ?? '10,25,50,100,200').split(',').map(Number);
    if (rates.some((n) => !Number.isInteger(n) || n < 1))
      fail(`--rates must be whole numbers ≥ 1 separated by commas, got "${values.rates}"`);
    const machine = `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.versions.node}`;
    const r = await compareScenario(
      {
        scenarios,
        ...(systems ? { systems } : {}),
        repeat,
        workers: whole('workers', 1),
        converge: { crs: whole('crs', 1), replicas: whole('replicas', 0), idleSeconds: whole('idle-seconds', 0) },
        churn: { crs: whole('churn-crs', 1), rates, seconds: whole('churn-seconds', 1) },
        steady: {
          crs: whole('steady-crs', 1),
          pods: whole('steady-pods', 0),
          idleSeconds: whole('steady-idle-seconds', 0),
          restarts: whole('restarts', 1),
        },
        scale: { sizes },
        log,
      },
      machine,
    );
    result = r;
    table = compareMarkdown(r);
    if (values.docs) await writeDocs(r);
    break;
  }
  default:
    process.stderr.write(`bench: unknown scenario "${scenario}"\n${USAGE}`);
    process.exit(2);
}
process.stdout.write(`${table}\n`);
if (values.json) {
  await writeJson(values.json, result);
  log(`figures written to ${values.json}`);
}

async function writeJson(path: string, figures: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(figures, null, 2)}\n`);
}

/** The runs in an earlier shard JSON at `path` made with the same workload (none when it is missing or differs). */
async function shardRunsIn(
  path: string,
  w: { crs: number; podsPerCR: number; workers: number },
): Promise<ShardResult['runs']> {
  const earlier = JSON.parse(await readFile(path, 'utf8').catch(() => '{}')) as Partial<ShardResult>;
  const same = earlier.crs === w.crs && earlier.podsPerCR === w.podsPerCR && earlier.workers === w.workers;
  if (earlier.runs && !same) log(`--resume: ${path} has another workload; starting over`);
  return same ? (earlier.runs ?? []) : [];
}

function informerMarkdown(r: InformerResult): string {
  const row = (name: string, ours: number, peer: number, unit = '') =>
    `| ${name} | ${ours}${unit} | ${peer}${unit} | ${(ours / peer).toFixed(2)}× |`;
  return [
    `Informer, ${r.objects} pods, median of ${r.repetitions} runs per informer`,
    '',
    '| figure | opkit | client-node | opkit / client-node |',
    '| --- | --- | --- | --- |',
    row('time to sync (s)', r.syncSeconds, r.peer.syncSeconds),
    row('heap per cached object (bytes)', r.heapBytesPerObject, r.peer.heapBytesPerObject),
    row('CPU per watch event (µs)', r.cpuMicrosPerEvent, r.peer.cpuMicrosPerEvent),
    row('watch events delivered per second', r.eventsPerSecond, r.peer.eventsPerSecond),
    '',
    `opkit keeping managedFields (as the peer does): sync ${r.oursKeepingManagedFields.syncSeconds} s, ` +
      `${r.oursKeepingManagedFields.heapBytesPerObject} bytes per object.`,
    `opkit_cache_bytes estimates ${r.cacheBytesMetric.estimatedBytesPerObject} bytes per cached pod (its JSON); the heap ` +
      `holds ${r.cacheBytesMetric.heapPerEstimatedByte}× that.`,
    `Work queue (in-process): ${r.queueOpsPerSecond} add+get+done cycles per second.`,
    `Update events never delivered: opkit ${r.missedEvents.ours}, client-node ${r.missedEvents.peer}.`,
  ].join('\n');
}

function convergeMarkdown(r: ConvergeResult): string {
  return [
    `AppService operator, ${r.crs} AppServices × ${r.replicas} pods, ${r.workers} workers`,
    '',
    '| figure | value |',
    '| --- | --- |',
    `| wall time to all converged (s) | ${r.seconds} |`,
    `| create → converged, p50 / p99 (s) | ${r.latencyP50Seconds} / ${r.latencyP99Seconds} |`,
    `| API requests per AppService | ${r.requestsPerCR} (${Object.entries(r.requestsPerCRByVerb)
      .map(([v, n]) => `${v} ${n}`)
      .join(', ')}) |`,
    `| operator peak RSS (MiB) | ${r.peakRssMiB} |`,
    `| operator CPU (s) | ${r.cpuSeconds} |`,
    `| writes while idle for ${r.idleSeconds} s | ${r.idleWrites} |`,
  ].join('\n');
}
