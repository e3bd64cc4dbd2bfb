#!/usr/bin/env node
/**
 * @module main
 * The `opkit` command. First refuses, in one line, a Node older than this package's `engines.node`; then dispatches
 * to a command module. A failure prints `opkit: <message>` (no stack trace) and exits non-zero: 2 for a usage error,
 * 1 otherwise.
 */
import { refuseUnsupportedNode } from './node-version.ts';

refuseUnsupportedNode('opkit', new URL('../package.json', import.meta.url));
const { run } = await import('./run.ts');
process.exitCode = await run(
  process.argv.slice(2),
  (line) => process.stdout.write(`${line}\n`),
  (line) => process.stderr.write(`${line}\n`),
);
