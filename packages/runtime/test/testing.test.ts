/**
 * `@opkit/runtime/testing` on a real control plane: the test manager runs as the ServiceAccount with the RBAC derived
 * from `permissions`, so a permission left out fails the test at once with the 403 named; `eventually` polls.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Environment, start, waitFor } from '@opkit/testenv';
import { Type } from '@sinclair/typebox';
import { ConfigMaps } from '../src/client/builtins.ts';
import { Defaulted, defineKind, type Manager, permission } from '../src/index.ts';
import { eventually, startTestManager, TestingError } from '../src/testing/index.ts';

const REJECTED_STOP = fileURLToPath(new URL('./fixtures/rejected-stop.ts', import.meta.url));

const Gadgets = defineKind({
  group: 'testing.opkit.dev',
  version: 'v1',
  kind: 'Gadget',
  plural: 'gadgets',
  spec: Type.Object({ note: Defaulted(Type.String(), 'none') }),
  status: Type.Object({ done: Type.Optional(Type.Boolean()) }),
  subresources: { status: true },
});

/** Each Gadget gets a ConfigMap holding its note. */
function setup(mgr: Manager): void {
  mgr.controller(Gadgets).reconcile(async (g, ctx) => {
    await ctx.apply(ConfigMaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `${g.metadata.name}-note` },
      data: { note: g.spec.note },
    });
    await ctx.status({ done: true });
  });
}

const gadgetPermissions = [
  permission(Gadgets, ['list', 'watch']),
  permission(Gadgets, ['patch'], { subresource: 'status' }),
];

let env: Environment;
before(async () => {
  env = await start({ nodes: 0, log: () => {} });
});
after(async () => {
  await env?.stop();
});

test('a test manager with the permissions it needs converges, as its ServiceAccount', async () => {
  await using op = await startTestManager(env, {
    name: 'gadget-operator',
    kinds: [Gadgets],
    // server-side apply of a new object needs create as well as patch
    permissions: [...gadgetPermissions, permission(ConfigMaps, ['list', 'watch', 'create', 'patch'])],
    setup,
  });
  await op.client.create(Gadgets, { metadata: { name: 'g1', namespace: 'default' }, spec: {} });
  const cm = await op.eventually('the ConfigMap', () =>
    op.client.getIfExists(ConfigMaps, { namespace: 'default', name: 'g1-note' }),
  );
  assert.equal(cm.data?.note, 'none', 'the CRD default reached the reconciler');
});

test('a permission missing from `permissions` fails the test with the 403 named, not a timeout', async () => {
  const op = await startTestManager(env, {
    name: 'gadget-operator-short',
    kinds: [Gadgets],
    permissions: [...gadgetPermissions, permission(ConfigMaps, ['list', 'watch', 'patch'])], // no create: refused
    setup,
  });
  await op.client.create(Gadgets, { metadata: { name: 'g2', namespace: 'default' }, spec: { note: 'x' } });
  const t0 = performance.now();
  await assert.rejects(
    op.eventually(
      'the status',
      async () => (await op.client.get(Gadgets, { namespace: 'default', name: 'g2' })).status?.done,
    ),
    (err) =>
      err instanceof TestingError &&
      err.code === 'TestManagerForbidden' &&
      /gadget-operator-short/.test(err.message) &&
      /configmaps/.test(err.message),
  );
  assert.ok(performance.now() - t0 < 20_000, 'at once, not after the timeout');
  await assert.rejects(op.stop(), (err) => err instanceof TestingError && err.code === 'TestManagerForbidden');
});

test('eventually: the first answer; on timeout the last error as the cause', async () => {
  let n = 0;
  assert.equal(await eventually('n to reach 3', () => (++n >= 3 ? n : undefined), { intervalMs: 1 }), 3);
  await assert.rejects(
    eventually(
      'never',
      () => {
        throw new Error('still not');
      },
      { timeoutMs: 50, intervalMs: 5 },
    ),
    (err) =>
      err instanceof TestingError &&
      err.code === 'EventuallyTimeout' &&
      /never: not within 0.05 s: still not/.test(err.message),
  );
});

test('a test whose op.stop() rejects before env.stop(): the process still exits, and the control plane is gone', async () => {
  const child = spawn(process.execPath, [REJECTED_STOP], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    output += c;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const lines = createInterface({ input: child.stdout });
  const line = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    void exited.then((code) => reject(new Error(`the fixture exited with ${code} before starting: ${output}`)));
  });
  lines.on('line', (l) => {
    output += `${l}\n`;
  });
  const { dir, pids } = JSON.parse(line) as { dir: string; pids: Record<string, number> };
  assert.equal(Object.keys(pids).length, 5);
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([exited, new Promise<'hung'>((r) => (timer = setTimeout(() => r('hung'), 90_000)))]);
  clearTimeout(timer);
  if (code === 'hung') child.kill('SIGKILL');
  assert.notEqual(code, 'hung', `the test process did not exit within 90 s after its test failed: ${output}`);
  assert.equal(code, 1, 'the failed test sets the exit status');
  await waitFor('every component to end', async () => Object.values(pids).every((p) => !isAlive(p)), 20_000);
  await waitFor(
    'the run directory to be removed',
    async () =>
      access(dir).then(
        () => false,
        () => true,
      ),
    10_000,
  );
});

/** True when `pid` runs (a zombie waiting to be reaped counts as ended). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
