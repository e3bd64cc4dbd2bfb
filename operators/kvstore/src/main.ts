#!/usr/bin/env node
// scaffolded by opkit — this file is yours to edit
/**
 * The kvstore-operator process: a Manager (caches, controllers, leader election, /metrics, /healthz, /readyz)
 * configured from flags and environment (run with --help), the KVStore and KVSnapshot controllers, and the KVStore
 * validating webhook (unless ENABLE_WEBHOOKS=false: something else serves it, as in a local run).
 */
import { Manager, settings } from '@opkit/runtime';
import { setupKVSnapshotController } from './controllers/kvsnapshot.ts';
import { setupKVStoreController } from './controllers/kvstore.ts';
import { setupWebhooks } from './webhooks.ts';
// +opkit:scaffold:imports

export const OPERATOR_NAME = 'kvstore-operator';

const { manager, flags } = settings({
  name: OPERATOR_NAME,
  description: 'Runs KVStores (kv.example.com/v1alpha1): replicated stores with snapshots and restore.',
  flags: {
    webhooks: {
      type: 'boolean',
      env: 'ENABLE_WEBHOOKS',
      default: true,
      help: 'serve the admission webhooks (false: something else serves them)',
    },
  },
});
try {
  const mgr = await Manager.create(manager);
  setupKVStoreController(mgr);
  setupKVSnapshotController(mgr);
  // +opkit:scaffold:controllers
  if (flags.webhooks) setupWebhooks(mgr);
  // +opkit:scaffold:webhooks
  await mgr.run();
} catch (err) {
  process.stderr.write(`${OPERATOR_NAME}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}\n`);
  process.exit(1);
}
