#!/usr/bin/env node
/**
 * @module main
 * `npm create opkit@latest <name> -- [--domain …]` runs this: first a Node older than this package supports gets one
 * line, then the project is created as `opkit init` would.
 */
import { refuseUnsupportedNode } from '@opkit/cli/node-version';

refuseUnsupportedNode('create-opkit', new URL('../package.json', import.meta.url));
const { createProject } = await import('./create.ts');
process.exitCode = await createProject(
  process.argv.slice(2),
  process.cwd(),
  (line) => process.stdout.write(`${line}\n`),
  (line) => process.stderr.write(`${line}\n`),
);
