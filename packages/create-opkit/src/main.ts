#!/usr/bin/env node
/**
 * @module main
 * `npm create opkit@latest <name> -- [--domain …]` runs this: first a Node older than this package supports gets one
 * line, then the project is created as `opkit init` would.
 */
import { readFileSync } from 'node:fs';
import { nodeVersionProblem } from '@opkit/cli/node-version';

const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  engines: { node: string };
};
const problem = nodeVersionProblem('create-opkit', manifest.engines.node, process.version);
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
const { createProject } = await import('./create.ts');
process.exitCode = await createProject(
  process.argv.slice(2),
  process.cwd(),
  (line) => process.stdout.write(`${line}\n`),
  (line) => process.stderr.write(`${line}\n`),
);
