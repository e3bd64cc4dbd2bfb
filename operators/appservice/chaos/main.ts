/**
 * `npm run chaos -- [--trials N] [--seed S] [--kinds a,b] [--fuzz N] [--json FILE]`: the reliability and security
 * suite against the AppService operator on a local control plane (chaos/run.ts). Prints the report; exits 1 when a
 * goal is missed, 2 on a bad flag.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { FAULT_KINDS, type FaultKind } from './faults.ts';
import { chaosMarkdown, runChaos } from './run.ts';

const USAGE = `Usage: npm run chaos -- [--trials N] [--seed S] [--kinds KIND,…] [--fuzz N] [--json FILE]

  --trials N   trials of each fault kind (default 50)
  --seed S     seed of the trials, faults and fuzz bodies (default 1)
  --kinds      fault kinds to run (default all): ${FAULT_KINDS.join(', ')}
  --fuzz N     hostile AppService bodies (default 1000)
  --json FILE  write the figures as JSON
`;

function fail(message: string): never {
  process.stderr.write(`chaos: ${message}\n\n${USAGE}`);
  process.exit(2);
}

let values: ReturnType<typeof parse>['values'];
function parse() {
  return parseArgs({
    options: {
      trials: { type: 'string', default: '50' },
      seed: { type: 'string', default: '1' },
      kinds: { type: 'string' },
      fuzz: { type: 'string', default: '1000' },
      json: { type: 'string' },
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
const whole = (name: 'trials' | 'seed' | 'fuzz', min: number) => {
  const v = Number(values[name]);
  if (!Number.isInteger(v) || v < min) fail(`--${name} must be a whole number ≥ ${min}, got "${values[name]}"`);
  return v;
};
const kinds = values.kinds?.split(',').map((k) => k.trim());
const unknown = kinds?.find((k) => !(FAULT_KINDS as readonly string[]).includes(k));
if (unknown) fail(`--kinds: unknown fault kind "${unknown}"`);

const report = await runChaos({
  trials: whole('trials', 0),
  seed: whole('seed', 0),
  fuzz: whole('fuzz', 0),
  ...(kinds ? { kinds: kinds as FaultKind[] } : {}),
  log: (line) => process.stderr.write(`[chaos] ${line}\n`),
});
process.stdout.write(`${chaosMarkdown(report)}\n`);
if (values.json) {
  await mkdir(dirname(values.json), { recursive: true });
  await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
}
process.exit(report.passed ? 0 : 1);
