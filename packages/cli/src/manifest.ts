/**
 * @module manifest
 * This package's own version and supported Node range, read once from its package.json — the file that ships beside
 * `dist/` and sits beside `src/` in the repository, so sources and built code agree. Scaffolded projects take their
 * opkit version range and `engines` from here; nothing else states them. Imports only node:fs, so the Node-version
 * check can use it before anything else loads.
 */
import { readFileSync } from 'node:fs';

export interface OwnManifest {
  readonly version: string;
  readonly engines: { readonly node: string };
}

let cached: OwnManifest | undefined;

export function ownManifest(): OwnManifest {
  cached ??= JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as OwnManifest;
  return cached;
}
