#!/usr/bin/env node
// scaffolded by opkit — this file is yours to edit
/**
 * The kvstore-operator process: a Manager (caches, controllers, leader election, /metrics, /healthz, /readyz)
 * configured from flags and environment (run with --help), and the KVStore and KVSnapshot controllers. It serves no
 * webhook: what a write may do is in the CRD, as CEL rules the apiserver runs (api/v1alpha1/kvstore).
 */
import { Manager, settings } from '@opkit/runtime';
import { setupKVSnapshotController } from './controllers/kvsnapshot.ts';
import { setupKVStoreController } from './controllers/kvstore.ts';
// +opkit:scaffold:imports

export const OPERATOR_NAME = 'kvstore-operator';

const { manager } = settings({
  name: OPERATOR_NAME,
  description: 'Runs KVStores (kv.example.com/v1alpha1): replicated stores with snapshots and restore.',
});
try {
  const mgr = await Manager.create(manager);
  setupKVStoreController(mgr);
  setupKVSnapshotController(mgr);
  // +opkit:scaffold:controllers
  // +opkit:scaffold:webhooks
  await mgr.run();
} catch (err) {
  process.stderr.write(`${OPERATOR_NAME}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}\n`);
  process.exit(1);
}
