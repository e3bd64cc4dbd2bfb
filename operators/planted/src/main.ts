#!/usr/bin/env node
// scaffolded by opkit — this file is yours to edit
/**
 * The planted-operator process: a Manager configured from flags and environment (run with --help), and the Widget
 * controller of the bug class PLANTED_BUG (PLANTED_FIXED=true: its fixed version).
 */
import { Manager, settings } from '@opkit/runtime';
import { setupWidgetController } from './controllers/widget.ts';
// +opkit:scaffold:imports

export const OPERATOR_NAME = 'planted-operator';

const { manager } = settings({
  name: OPERATOR_NAME,
  description: 'Widgets (planted.example.com/v1), reconciled by an operator with a planted bug, or its fix.',
});
try {
  const mgr = await Manager.create(manager);
  setupWidgetController(mgr);
  // +opkit:scaffold:controllers
  // +opkit:scaffold:webhooks
  await mgr.run();
} catch (err) {
  process.stderr.write(`${OPERATOR_NAME}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}\n`);
  process.exit(1);
}
