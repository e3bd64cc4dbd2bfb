// scaffolded by opkit — this file is yours to edit
// The AppService controller in-process on a real local control plane (@opkit/testenv; the run's, see test/setup.ts):
// the generated CRD is installed, the controller runs in a Manager, and an AppService gets its pods and reports them.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Manager } from '@opkit/runtime';
import { Client, loadConfig } from '@opkit/runtime/client';
import { Pods } from '@opkit/runtime/kinds';
import { silentLogger } from '@opkit/runtime/manager';
import { type SharedEnvironment, sharedEnvironment } from '@opkit/testenv';
import { AppServices } from '../src/api/v1alpha1/appservice.ts';
import { setupAppServiceController } from '../src/controllers/appservice.ts';
import { installApiAndRbac } from '../src/install.ts';

let env: SharedEnvironment;
let client: Client;
before(async () => {
  env = await sharedEnvironment({ nodes: 1, log: () => {} });
  client = new Client(await loadConfig({ path: env.kubeconfigPath }));
  await installApiAndRbac(client);
});
after(async () => {
  client?.close();
  await env?.release();
});

test('an AppService gets its pods, and its status lists them', async () => {
  const mgr = new Manager({
    name: 'test',
    client,
    log: silentLogger,
    metrics: { bindAddress: '0' },
    health: { bindAddress: '0' },
  });
  setupAppServiceController(mgr);
  const stop = new AbortController();
  const running = mgr.start(stop.signal);
  try {
    await client.create(AppServices, {
      metadata: { name: 'sample', namespace: 'default' },
      spec: { replicas: 2, image: 'busybox' },
    } as never);
    for (let i = 0; i < 200; i++) {
      const app = await client.get(AppServices, { namespace: 'default', name: 'sample' });
      if (app.status?.readyReplicas === 2) {
        const pods = (await client.list(Pods, { namespace: 'default' })).items.filter(
          (p) => p.metadata.ownerReferences?.[0]?.uid === app.metadata.uid,
        );
        assert.deepEqual(app.status.podNames, pods.map((p) => p.metadata.name).sort());
        return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.fail('the AppService did not report 2 ready pods');
  } finally {
    stop.abort();
    await running;
  }
});
