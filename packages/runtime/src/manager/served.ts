/**
 * @module manager/served
 * The manager's first check at start: every resource a controller watches is served by the apiserver.
 *
 * Guarantees: resolves once every resource was found served, or as soon as `signal` aborts (without error); rejects
 * with a `ManagerError` `ResourceNotServed` naming the first resource that is not (a CRD not installed: the message
 * says to install it), or `ApiUnreachable` once the apiserver could not be reached for `timeoutMs` (retrying with
 * backoff, 0.5 s doubling to 5 s, until then).
 */

import type { Client } from '../client/client.ts';
import { isApiError } from '../client/errors.ts';
import { type Kind, resourceId } from '../client/resource.ts';
import { sleep } from '../internal/sleep.ts';
import type { Logger } from '../logger.ts';
import { ManagerError } from './errors.ts';

/** How long `checkServed` keeps trying to reach the apiserver unless told otherwise. */
export const DEFAULT_API_REACHABLE_TIMEOUT_MS = 30_000;

/** Checks that the apiserver serves each of `resources` (see the module comment). */
export async function checkServed(
  client: Client,
  resources: Iterable<Kind>,
  options: { readonly timeoutMs: number; readonly log: Logger; readonly signal: AbortSignal },
): Promise<void> {
  const unique = new Map<string, Kind>();
  for (const r of resources) unique.set(resourceId(r), r);
  const deadline = Date.now() + options.timeoutMs;
  for (const r of unique.values()) if (!(await served(client, r, deadline, options))) return;
}

/** True once `r` was found served; false when `signal` aborted first. */
async function served(
  client: Client,
  r: Kind,
  deadline: number,
  { log, signal }: { readonly log: Logger; readonly signal: AbortSignal },
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    if (signal.aborted) return false;
    try {
      const found = await client.serverResources(r.apiVersion, { signal });
      if (found.some((x) => x.name === r.plural)) return true;
      throw new ManagerError('ResourceNotServed', notServed(r));
    } catch (err) {
      if (err instanceof ManagerError) throw err;
      if (isApiError(err, 'NotFound')) throw new ManagerError('ResourceNotServed', notServed(r));
      if (isApiError(err, 'Aborted')) return false;
      if (Date.now() > deadline) {
        throw new ManagerError(
          'ApiUnreachable',
          `cannot reach the apiserver at ${client.transport.server.origin}: ${describe(err)}`,
          { cause: err },
        );
      }
      const delay = Math.min(5_000, 250 * 2 ** attempt);
      log.warn({ err: describe(err), retryInMs: delay }, 'cannot reach the apiserver yet');
      await sleep(delay, signal);
    }
  }
}

function notServed(r: Kind): string {
  const id = resourceId(r);
  return r.group === '' || r.group.endsWith('.k8s.io') || !r.group.includes('.')
    ? `the apiserver does not serve ${id} (${r.apiVersion})`
    : `the apiserver does not serve ${id} (${r.apiVersion}): install its CustomResourceDefinition first (e.g. kubectl apply -f config/crd)`;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
