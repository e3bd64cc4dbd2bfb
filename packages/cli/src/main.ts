#!/usr/bin/env node
/**
 * @module main
 * The `opkit` command. Dispatches to a command module; a failure prints `opkit: <message>` (no stack trace) and exits
 * non-zero: 2 for a usage error, 1 otherwise.
 */
import { run } from './run.ts';

process.exitCode = await run(
  process.argv.slice(2),
  (line) => process.stdout.write(`${line}\n`),
  (line) => process.stderr.write(`${line}\n`),
);
