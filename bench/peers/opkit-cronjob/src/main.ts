#!/usr/bin/env node
// scaffolded by opkit — this file is yours to edit
/**
 * The cronjob operator process: a Manager (caches, controllers, leader election, /metrics, /healthz,
 * /readyz) configured from flags and environment (run with --help), and the controllers `opkit create api` added.
 */
import { Manager, settings } from '@opkit/runtime';
import { setupCronJobController } from './controllers/cronjob.ts';
import { startTracing, TRACING_FLAGS } from './tracing.ts';
import { setupWebhooks } from './webhooks.ts';
// +opkit:scaffold:imports

export const OPERATOR_NAME = 'cronjob';

// --help lists the manager's flags and yours; declare your own here, typed, e.g.
// resyncPeriod: { type: 'duration', env: 'RESYNC_PERIOD', help: 'reconcile everything this often' }
const { manager, flags } = settings({ name: OPERATOR_NAME, flags: { ...TRACING_FLAGS } });
try {
  const tracing = await startTracing(OPERATOR_NAME, flags.tracing); // off unless --tracing
  const mgr = await Manager.create({
    ...manager,
    controllers: { ...manager.controllers, traceContextFromAnnotations: tracing !== undefined },
  });
  if (tracing) mgr.onStopped(tracing); // exports the last spans once the manager has stopped
  setupCronJobController(mgr);
  // +opkit:scaffold:controllers
  if (process.env.ENABLE_WEBHOOKS !== 'false') setupWebhooks(mgr);
  await mgr.run();
} catch (err) {
  process.stderr.write(`${OPERATOR_NAME}: ${(err as Error).message.split('\n')[0]}\n`);
  process.exit(1);
}
