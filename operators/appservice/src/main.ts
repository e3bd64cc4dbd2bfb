#!/usr/bin/env node
/**
 * @module main
 * The AppService operator process. Flags and environment (see `--help`): the manager's (kubeconfig, namespace to
 * watch, metrics and health addresses, leader election, log level and format, workers, shutdown timeout) and
 * `--resync-period` (off by default: watches drive reconciles). Exits 0 after SIGTERM/SIGINT, 1 with a one-line
 * reason on a fatal error (no cluster, missing CRD, lost leadership), 2 on a bad flag.
 */
import {
  generationChanged,
  Manager,
  Pods,
  parseDuration,
  SETTINGS_HELP,
  SettingsError,
  settingsFromArgs,
} from '@opkit/runtime';
import { AppServices } from './api/v1alpha1/appservice.ts';
import { AppServiceReconciler } from './controller/appservice.ts';

export const OPERATOR_NAME = 'appservice-operator';

const HELP = `Usage: appservice-operator [options]

Runs the AppService controller: each AppService (app.example.com/v1alpha1) gets spec.replicas pods.

${SETTINGS_HELP}  --resync-period DUR                reconcile every AppService this often too (default: off)
  -h, --help                         show this help
`;

async function main(argv: string[]): Promise<void> {
  if (argv.includes('-h') || argv.includes('--help')) {
    process.stdout.write(HELP);
    return;
  }
  const rest = [...argv];
  let resyncPeriodMs: number | undefined;
  const at = rest.findIndex((a) => a === '--resync-period' || a.startsWith('--resync-period='));
  try {
    if (at >= 0) {
      const [flag, inline] = (rest[at] as string).split('=', 2);
      const value = inline ?? rest[at + 1];
      if (value === undefined) throw new SettingsError(`${flag}: a duration is required`);
      resyncPeriodMs = parseDuration(value, '--resync-period');
      rest.splice(at, inline === undefined ? 2 : 1);
    }
    const settings = settingsFromArgs({ name: OPERATOR_NAME }, rest, {
      ...process.env,
      RESYNC_PERIOD: undefined,
    });
    if (resyncPeriodMs === undefined && process.env.RESYNC_PERIOD)
      resyncPeriodMs = parseDuration(process.env.RESYNC_PERIOD, 'RESYNC_PERIOD');
    const mgr = await Manager.create(settings);
    mgr
      .controller()
      .named('appservice')
      .for(AppServices, generationChanged)
      .owns(Pods)
      .withOptions(resyncPeriodMs ? { resyncPeriodMs } : {})
      .complete(new AppServiceReconciler(mgr.eventRecorder(OPERATOR_NAME)));
    await mgr.run();
  } catch (err) {
    const line = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    process.stderr.write(`${OPERATOR_NAME}: ${line}\n`);
    process.exit(err instanceof SettingsError ? 2 : 1);
  }
}

await main(process.argv.slice(2));
