/**
 * The scaffolded tracing (src/tracing.ts of a new project), run as written: off by default, and with `--tracing` it
 * exports spans over OTLP/HTTP to the configured endpoint (a recording receiver on loopback) and flushes on stop.
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Project } from '../src/project/project.ts';
import { initFiles } from '../src/scaffold/templates.ts';

const LINK = fileURLToPath(new URL('./fixtures/link-workspace.ts', import.meta.url));
const project: Project = {
  layout: 'opkit.dev/v1',
  projectName: 'traced-operator',
  domain: 'example.com',
  namespace: 'traced-operator-system',
  image: 'traced-operator:0.1.0',
  resources: [],
};

/** Starts tracing as main.ts does, records one span, stops (which flushes), and prints what it saw. */
const PROBE = `import { trace } from '@opentelemetry/api';
import { settings } from '@opkit/runtime';
import { startTracing, TRACING_FLAGS } from './src/tracing.ts';
const { manager, flags } = settings({ name: 'traced-operator', flags: { ...TRACING_FLAGS } });
const flush = await startTracing('traced-operator', flags.tracing);
process.stdout.write(JSON.stringify({ on: flush !== undefined, namespace: manager.cache?.namespace ?? null }));
if (flush) {
  trace.getTracer('probe').startSpan('probe span').end();
  await flush();
}
`;

let dir: string;
const received: { path: string; type: string; body: Buffer }[] = [];
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    received.push({ path: req.url ?? '', type: req.headers['content-type'] ?? '', body: Buffer.concat(chunks) });
    res.writeHead(200, { 'content-type': 'application/x-protobuf' });
    res.end();
  });
});

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'opkit-tracing-'));
  for (const [path, content] of initFiles(project)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  await writeFile(join(dir, 'probe.ts'), PROBE);
  const r = spawnSync(process.execPath, [LINK, dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
});
after(async () => {
  receiver.close();
  await rm(dir, { recursive: true, force: true });
});

/** Runs the probe (asynchronously: the receiver answers from this process). */
async function probe(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ on: boolean; namespace: string | null }> {
  const port = (receiver.address() as AddressInfo).port;
  const { stdout } = await promisify(execFile)(process.execPath, ['probe.ts', ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, TRACING: '', ...env },
    timeout: 60_000,
  });
  return JSON.parse(stdout) as { on: boolean; namespace: string | null };
}

test('off by default: nothing registered, nothing sent, the manager flags parsed as ever', async () => {
  assert.deepEqual(await probe(['--namespace', 'x']), { on: false, namespace: 'x' });
  assert.equal(received.length, 0);
});

test('--tracing exports the spans over OTLP/HTTP as the operator, beside the manager flags', async () => {
  assert.deepEqual(await probe(['--tracing', '--namespace', 'x']), { on: true, namespace: 'x' });
  const [sent] = received.splice(0);
  assert.equal(sent?.path, '/v1/traces');
  assert.equal(sent?.type, 'application/x-protobuf');
  assert.ok(sent?.body.includes('probe span'), 'the span is in the export');
  assert.ok(sent?.body.includes('traced-operator'), 'service.name is the operator');
  assert.equal((await probe([], { TRACING: 'true' })).on, true, 'TRACING=true turns it on too');
});
