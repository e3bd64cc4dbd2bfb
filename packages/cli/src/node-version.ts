/**
 * @module node-version
 * The check every opkit entry point (the `opkit` bin, `create-opkit`, a scaffolded project's scripts) runs before it
 * loads anything else: a Node older than the package's `engines.node` minimum gets one line naming both versions and
 * what to install, instead of a loader error about `.ts` files. This module imports only node:fs and errors.ts (which
 * imports nothing), so it loads on any Node that runs ES modules.
 */
import { readFileSync } from 'node:fs';
import { CliError } from './errors.ts';

/**
 * The minimum of an `engines.node` range of the form `>=X.Y[.Z]` (the form our packages use), as [major, minor, patch];
 * any other form is a `CliError` `EnginesRangeInvalid`.
 */
export function minimumOf(range: string): [number, number, number] {
  const m = /^\s*>=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$/.exec(range);
  if (!m) throw new CliError('EnginesRangeInvalid', `engines.node "${range}" is not of the form >=X.Y.Z`);
  return [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)];
}

function parts(version: string): [number, number, number] {
  const [major = 0, minor = 0, patch = 0] = version.replace(/^v/, '').split(/[.-]/).map(Number);
  return [major, minor, patch];
}

/**
 * `undefined` when `version` (e.g. `process.version`) satisfies `range` (`>=X.Y.Z`); otherwise the one line to print,
 * e.g. `opkit needs Node ≥ 22.18 (this is v20.20.2): install Node 22 LTS or newer`.
 */
export function nodeVersionProblem(tool: string, range: string, version: string): string | undefined {
  const min = minimumOf(range);
  const have = parts(version);
  for (let i = 0; i < 3; i++) {
    if ((have[i] ?? 0) > (min[i] ?? 0)) return undefined;
    if ((have[i] ?? 0) < (min[i] ?? 0)) {
      const shown = min[2] === 0 ? `${min[0]}.${min[1]}` : min.join('.');
      return `${tool} needs Node ≥ ${shown} (this is ${version}): install Node ${min[0]} LTS or newer`;
    }
  }
  return undefined;
}

/**
 * Ends the process (exit 1) with the one line when this Node is older than the `engines.node` of the package.json at
 * `manifest`; an entry point calls it before it imports anything else.
 */
export function refuseUnsupportedNode(tool: string, manifest: URL): void {
  const { engines } = JSON.parse(readFileSync(manifest, 'utf8')) as { engines: { node: string } };
  const problem = nodeVersionProblem(tool, engines.node, process.version);
  if (!problem) return;
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
