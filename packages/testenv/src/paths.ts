/**
 * @module paths
 * Where @opkit/testenv keeps things: the binary cache under the user cache directory (`$XDG_CACHE_HOME/opkit` or
 * `~/.cache/opkit`, overridable with `OPKIT_CACHE_DIR`) and per-environment run directories under the OS temp dir.
 */
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The user cache directory of @opkit/testenv: `OPKIT_CACHE_DIR`, else `$XDG_CACHE_HOME/opkit`, else `~/.cache/opkit`.
 */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.OPKIT_CACHE_DIR) return env.OPKIT_CACHE_DIR;
  const xdg = env.XDG_CACHE_HOME;
  return join(xdg && xdg.length > 0 ? xdg : join(homedir(), '.cache'), 'opkit');
}

/** Directory holding the run directories (one per environment, removed on clean stop unless kept). */
export function runRoot(): string {
  return join(tmpdir(), 'opkit-testenv');
}

/** The file that marks a run directory kept (`keepDir`): no watchdog and no later `start()` removes that directory. */
export const KEPT_MARKER = 'KEPT';
export const KEPT_TEXT = 'kept for inspection (keepDir): opkit never removes this directory; delete it when done\n';
