import assert from 'node:assert/strict';
import { access } from 'node:fs/promises';
import { test } from 'node:test';
import { start } from '../src/index.ts';
import { alive, quiet } from './helpers.ts';

test('two environments started in parallel do not interfere', async () => {
  const [a, b] = await Promise.all([start({ nodes: 1, log: quiet }), start({ nodes: 1, log: quiet })]);
  try {
    assert.notEqual(a.server, b.server);
    assert.notEqual(a.dir, b.dir);
    await a.api.must({
      method: 'POST',
      path: '/api/v1/namespaces',
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'only-in-a' } },
    });
    assert.equal((await a.api.request({ path: '/api/v1/namespaces/only-in-a' })).status, 200);
    assert.equal((await b.api.request({ path: '/api/v1/namespaces/only-in-a' })).status, 404);
    // each trusts only its own CA: a's client certificate is refused by b
    const cross = await fetchStatus(b.server, a);
    assert.notEqual(cross, 200);
  } finally {
    const pids = [...Object.values(a.pids), ...Object.values(b.pids)];
    await Promise.all([a.stop(), b.stop()]);
    for (const pid of pids) assert.equal(alive(pid), false);
    await assert.rejects(access(a.dir));
    await assert.rejects(access(b.dir));
  }
});

async function fetchStatus(server: string, other: { caPem: string }): Promise<number | string> {
  const { ApiClient } = await import('../src/index.ts');
  const client = new ApiClient(server, other.caPem);
  try {
    return (await client.request({ path: '/api/v1/namespaces' })).status;
  } catch (err) {
    return String(err); // TLS: the other CA does not verify this server
  } finally {
    client.close();
  }
}
