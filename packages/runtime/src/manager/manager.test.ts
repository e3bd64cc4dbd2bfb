import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigMaps } from '../client/builtins.ts';
import { Client } from '../client/client.ts';
import { done } from '../controller/reconcile.ts';
import { silentLogger } from '../logger.ts';
import { Manager } from './manager.ts';

test('a stop while the apiserver is still being reached resolves start() (a graceful stop, not a failure)', async () => {
  // nothing listens on port 1: discovery keeps retrying until the stop
  const client = new Client({
    server: 'http://127.0.0.1:1',
    auth: { credentials: async () => ({ headers: {} }), invalidate() {} },
    namespace: 'default',
    contextName: 'test',
  });
  const mgr = new Manager({
    name: 'stop-early',
    client,
    log: silentLogger,
    metrics: { bindAddress: '0' },
    health: { bindAddress: '0' },
  });
  mgr
    .controller()
    .for(ConfigMaps)
    .complete(async () => done());
  const ctl = new AbortController();
  const running = mgr.start(ctl.signal);
  setTimeout(() => ctl.abort(), 300);
  const t0 = performance.now();
  await running; // rejected with the string 'stopped' before
  assert.ok(performance.now() - t0 < 5_000, 'the retry wait is cut short by the stop');
  client.close();
});
