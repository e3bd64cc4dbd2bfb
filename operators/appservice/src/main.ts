#!/usr/bin/env node
// scaffolded by opkit — this file is yours to edit
/**
 * The appservice-operator process: a Manager (caches, controllers, leader election, /metrics, /healthz, /readyz)
 * configured from flags and environment (run with --help), and the AppService controller. Beyond the manager's flags
 * it takes `--resync-period` (off by default: watches drive reconciles) and `--tracing` (OTLP export, off by default;
 * see tracing.ts). Exits 0 after SIGTERM/SIGINT, 1 with a one-line reason on a fatal error (no cluster, missing CRD,
 * lost leadership), 2 on a bad flag.
 */
import { Manager, parseDuration, SETTINGS_HELP, SettingsError, settingsFromArgs } from '@opkit/runtime';
import { setupAppServiceController } from './controllers/appservice.ts';
import { startTracing, TRACING_HELP } from './tracing.ts';
// +opkit:scaffold:imports

export const OPERATOR_NAME = 'appservice-operator';

const HELP = `Usage: appservice-operator [options]

Runs the AppService controller: each AppService (app.example.com/v1alpha1) gets spec.replicas pods.

${SETTINGS_HELP}${TRACING_HELP}  --resync-period DUR                reconcile every AppService this often too (default: off; env RESYNC_PERIOD)
  -h, --help                         show this help
`;

/** Takes `--resync-period D` / `--resync-period=D` out of argv (the manager's parser knows only its own flags). */
function resyncPeriod(argv: string[]): number | undefined {
  const at = argv.findIndex((a) => a === '--resync-period' || a.startsWith('--resync-period='));
  if (at < 0) return process.env.RESYNC_PERIOD ? parseDuration(process.env.RESYNC_PERIOD, 'RESYNC_PERIOD') : undefined;
  const [flag, inline] = (argv[at] as string).split('=', 2);
  const value = inline ?? argv[at + 1];
  if (value === undefined) throw new SettingsError(`${flag}: a duration is required (e.g. 10m)`);
  argv.splice(at, inline === undefined ? 2 : 1);
  return parseDuration(value, '--resync-period');
}

const argv = process.argv.slice(2);
if (argv.includes('-h') || argv.includes('--help')) {
  process.stdout.write(HELP);
  process.exit(0);
}
try {
  const resyncPeriodMs = resyncPeriod(argv);
  const tracing = await startTracing(OPERATOR_NAME, argv); // off unless --tracing
  const controllers = { traceContextFromAnnotations: tracing !== undefined };
  const mgr = await Manager.create(settingsFromArgs({ name: OPERATOR_NAME, controllers }, argv));
  if (tracing) mgr.onStopped(tracing); // exports the last spans once the manager has stopped
  setupAppServiceController(mgr, resyncPeriodMs ? { resyncPeriodMs } : {});
  // +opkit:scaffold:controllers
  await mgr.run();
} catch (err) {
  process.stderr.write(`${OPERATOR_NAME}: ${(err as Error).message.split('\n')[0]}\n`);
  process.exit(err instanceof SettingsError ? 2 : 1);
}
