import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Environment, FaultProxy, targetOf } from '@opkit/testenv';
import { ConfigMaps, Leases, Namespaces } from '../src/client/builtins.ts';
import type { Client } from '../src/client/index.ts';
import { startEnv, waitFor } from './support.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/le-manager.ts', import.meta.url));

interface Replica {
  readonly identity: string;
  readonly proc: ChildProcessWithoutNullStreams;
  readonly facts: { leading?: boolean; reconciled?: string; at: number }[];
  stderr: string;
  exit: Promise<number | null>;
}

function replica(env: Environment, identity: string, server?: string): Replica {
  const proc = spawn(process.execPath, [FIXTURE, env.kubeconfigPath, identity, ...(server ? [server] : [])], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const r: Replica = {
    identity,
    proc,
    facts: [],
    stderr: '',
    exit: new Promise((resolve) => proc.once('exit', (code) => resolve(code))),
  };
  createInterface({ input: proc.stdout }).on('line', (line) => r.facts.push({ ...JSON.parse(line), at: Date.now() }));
  proc.stderr.on('data', (c: Buffer) => {
    r.stderr += c.toString();
  });
  return r;
}

const leadingAt = (r: Replica) => r.facts.find((f) => f.leading === true)?.at;
const reconciled = (r: Replica) => r.facts.filter((f) => f.reconciled !== undefined).length;

describe('leader election between operator processes', () => {
  let env: Environment;
  let client: Client;
  const replicas: Replica[] = [];
  before(async () => {
    ({ env, client } = await startEnv());
    await client.create(Namespaces, { metadata: { name: 'le' } });
  });
  after(async () => {
    for (const r of replicas) r.proc.kill('SIGKILL');
    client?.close();
    await env?.stop();
  });

  test('exactly one replica reconciles; SIGKILL → the standby leads within lease + retry; SIGTERM → within 3 s', async () => {
    const a = replica(env, 'replica-a');
    replicas.push(a);
    await waitFor('a to lead', async () => leadingAt(a));
    const b = replica(env, 'replica-b');
    replicas.push(b);
    for (let i = 0; i < 3; i++) await client.create(ConfigMaps, { metadata: { name: `cm-${i}`, namespace: 'le' } });
    await waitFor('a to reconcile', async () => reconciled(a) >= 3);
    await new Promise((r) => setTimeout(r, 2_000));
    assert.equal(reconciled(b), 0, 'the standby does not reconcile');
    assert.equal(leadingAt(b), undefined);
    const lease = await client.get(Leases, { namespace: 'le', name: 'le-test-leader' });
    assert.equal(lease.spec?.holderIdentity, 'replica-a');
    assert.match(lease.spec?.renewTime ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'MicroTime');
    assert.equal(lease.spec?.leaseDurationSeconds, 15);

    const killedAt = Date.now();
    a.proc.kill('SIGKILL');
    const tookOver = await waitFor('b to lead', async () => leadingAt(b), 30_000);
    const after = tookOver - killedAt;
    assert.ok(after <= 15_000 + 2_000 * 1.2 + 1_000, `took over ${after} ms after SIGKILL (lease 15 s + retry 2 s)`);
    await waitFor('b to reconcile everything', async () => reconciled(b) >= 3);

    const c = replica(env, 'replica-c');
    replicas.push(c);
    await new Promise((r) => setTimeout(r, 1_500)); // c is campaigning
    const termAt = Date.now();
    b.proc.kill('SIGTERM');
    assert.equal(await b.exit, 0, `a graceful stop exits 0 (stderr: ${b.stderr})`);
    const cLeads = await waitFor('c to lead', async () => leadingAt(c), 10_000);
    assert.ok(cLeads - termAt <= 3_000, `took over ${cLeads - termAt} ms after SIGTERM (released lease)`);
    const released = await client.get(Leases, { namespace: 'le', name: 'le-test-leader' });
    assert.equal(released.spec?.holderIdentity, 'replica-c');
    assert.ok((released.spec?.leaseTransitions ?? 0) >= 2);
    c.proc.kill('SIGTERM');
    assert.equal(await c.exit, 0);
  });

  test('a leader cut off from the apiserver stops before its lease can expire, and exits 1 with a one-line reason', async () => {
    const proxy = await FaultProxy.start({ target: targetOf(env.server) });
    const d = replica(env, 'replica-d', proxy.url);
    replicas.push(d);
    try {
      await waitFor('d to lead', async () => leadingAt(d), 30_000);
      const e = replica(env, 'replica-e');
      replicas.push(e);
      const cutAt = Date.now();
      proxy.setMode({ kind: 'freeze' });
      const code = await d.exit;
      const stoppedAfter = Date.now() - cutAt;
      assert.equal(code, 1);
      assert.match(d.stderr, /^le-test: leader election lost: .*\n$/m);
      assert.ok(stoppedAfter < 15_000, `stopped ${stoppedAfter} ms after the cut, before the 15 s lease could expire`);
      const eLeads = await waitFor('e to lead', async () => leadingAt(e), 30_000);
      assert.ok(eLeads - cutAt >= 15_000 - 1_000, 'the standby waited for the lease to expire');
      e.proc.kill('SIGTERM');
      await e.exit;
    } finally {
      await proxy.close();
    }
  });
});
