#!/usr/bin/env node
// scaffolded by opkit — this file is yours to edit
/**
 * The appservice-operator process: a Manager (caches, controllers, leader election, /metrics, /healthz, /readyz)
 * configured from flags and environment (run with --help), and the AppService controller. Beyond the manager's flags
 * it takes `--resync-period` (off by default: watches drive reconciles) and `--tracing` (OTLP export, off by default;
 * see tracing.ts). Exits 0 after SIGTERM/SIGINT, 1 with a one-line reason on a fatal error (no cluster, missing CRD,
 * lost leadership), 2 on a bad flag.
 */
import { Manager, settings } from '@opkit/runtime';
import { setupAppServiceController } from './controllers/appservice.ts';
import { startTracing, TRACING_FLAGS } from './tracing.ts';
import { setupAppServiceWebhooks } from './webhooks.ts';
// +opkit:scaffold:imports

export const OPERATOR_NAME = 'appservice-operator';

const { manager, flags } = settings({
  name: OPERATOR_NAME,
  description: 'Runs the AppService controller: each AppService (app.example.com/v1alpha1) gets spec.replicas pods.',
  flags: {
    resyncPeriod: {
      type: 'duration',
      env: 'RESYNC_PERIOD',
      help: 'also reconcile every AppService this often (off unless set)',
    },
    ...TRACING_FLAGS,
    webhooks: {
      type: 'boolean',
      env: 'ENABLE_WEBHOOKS',
      default: true,
      help: 'serve the admission and conversion webhooks (false: something else serves them, as in a local run)',
    },
  },
});
try {
  const tracing = await startTracing(OPERATOR_NAME, flags.tracing); // off unless --tracing
  const mgr = await Manager.create({
    ...manager,
    controllers: { ...manager.controllers, traceContextFromAnnotations: tracing !== undefined },
  });
  if (tracing) mgr.onStopped(tracing); // exports the last spans once the manager has stopped
  setupAppServiceController(mgr, flags.resyncPeriod ? { resyncPeriodMs: flags.resyncPeriod } : {});
  // +opkit:scaffold:controllers
  if (flags.webhooks) setupAppServiceWebhooks(mgr);
  // +opkit:scaffold:webhooks
  await mgr.run();
} catch (err) {
  process.stderr.write(`${OPERATOR_NAME}: ${(err as Error).message.split('\n')[0]}\n`);
  process.exit(1);
}
