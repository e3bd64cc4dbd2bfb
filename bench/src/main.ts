/**
 * `npm run bench -- <scenario> [--repeat N] [--json FILE]`: runs a benchmark scenario, prints a Markdown table and
 * writes the figures as JSON. Scenarios: env-start.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { envStart, envStartMarkdown } from './scenarios/env-start.ts';

const USAGE = `Usage: npm run bench -- <scenario> [--repeat N] [--json FILE]

Scenarios:
  env-start   warm start time and memory of the local control plane, and the recorded cold build time
`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    json: { type: 'string' },
    repeat: { type: 'string', default: '3' },
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
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

let result: unknown;
let table: string;
switch (scenario) {
  case 'env-start': {
    const r = await envStart({ repeat, log });
    result = r;
    table = envStartMarkdown(r);
    break;
  }
  default:
    process.stderr.write(`bench: unknown scenario "${scenario}"\n${USAGE}`);
    process.exit(2);
}
process.stdout.write(`${table}\n`);
if (values.json) {
  await mkdir(dirname(values.json), { recursive: true });
  await writeFile(values.json, `${JSON.stringify(result, null, 2)}\n`);
  log(`figures written to ${values.json}`);
}
