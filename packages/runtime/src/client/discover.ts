/**
 * @module client/discover
 * The `Kind` of an apiVersion and kind named at run time (in a custom resource that names what to watch, in a
 * manifest), found by discovery as kubectl finds it: the group version's resources give the plural and the scope.
 *
 * Guarantees: each group version is asked once per connection (its `Transport`) for 5 minutes, and asked again when a
 * kind is not among its resources (a CRD installed since), when `refresh` says so, or once its answer is older: a kind
 * served later is found, and a CRD made again with another scope is seen within 5 minutes. A kind or group version the
 * apiserver does not serve is a `DiscoveryError` (`KindNotServed`) naming it; every other failure (Forbidden, a network
 * error) is thrown as it came, and not remembered. A malformed apiVersion (`a/b/c`, empty) is refused before any
 * request (`InvalidApiVersion`).
 */
import { OpkitError } from '../errors.ts';
import type { Client } from './client.ts';
import { isNotFound } from './errors.ts';
import { type Kind, resource } from './resource.ts';
import type { Transport } from './transport.ts';
import type { APIResource } from './types.ts';

/** Why a kind named at run time has no `Kind`. */
export type DiscoveryErrorCode =
  /** The apiserver does not serve the kind in that group version (a CRD not installed, a typo, a removed version). */
  | 'KindNotServed'
  /** The apiVersion is not `v1` or `<group>/<version>`. */
  | 'InvalidApiVersion';

/** A kind named at run time that the apiserver does not serve, or an apiVersion that cannot be one. */
export class DiscoveryError extends OpkitError<DiscoveryErrorCode> {
  override readonly name = 'DiscoveryError';
}

/** The resources of each group version, by connection: a `Client` made from another (`withSignal`) shares them. */
const known = new WeakMap<Transport, Map<string, { readonly at: number; readonly list: readonly APIResource[] }>>();

/** How long a group version's resources are taken as known. */
const KNOWN_MS = 5 * 60_000;

/**
 * The `Kind` of `kind` in `apiVersion` (`v1`, `apps/v1`, `app.example.com/v1alpha1`), by discovery: e.g. for
 * `ctx.watchKinds` of kinds a custom resource names. See the module comment.
 */
export async function kindFor(
  client: Client,
  apiVersion: string,
  kind: string,
  options: { readonly signal?: AbortSignal; readonly refresh?: boolean } = {},
): Promise<Kind> {
  const parts = apiVersion.split('/');
  if (parts.length > 2 || parts.some((p) => p === '') || kind === '')
    throw new DiscoveryError(
      'InvalidApiVersion',
      `"${apiVersion}" ${kind === '' ? 'with an empty kind ' : ''}does not name a kind: write the apiVersion as v1 or <group>/<version> (apps/v1) and the kind as it is (Deployment)`,
    );
  const [group, version] = parts.length === 2 ? (parts as [string, string]) : ['', apiVersion];
  const cached = known.get(client.transport) ?? new Map();
  known.set(client.transport, cached);
  const had = cached.get(apiVersion);
  const asked = had !== undefined && !options.refresh && performance.now() - had.at < KNOWN_MS;
  const served = async (fresh: boolean): Promise<readonly APIResource[]> => {
    if (!fresh && asked && had) return had.list;
    const signal = options.signal ? { signal: options.signal } : {};
    const list = await client.serverResources(apiVersion, signal).catch((err: unknown) => {
      if (isNotFound(err)) return [];
      throw err;
    });
    cached.set(apiVersion, { at: performance.now(), list });
    return list;
  };
  let found = (await served(false)).find((r) => r.kind === kind);
  if (!found && asked) found = (await served(true)).find((r) => r.kind === kind);
  if (!found)
    throw new DiscoveryError(
      'KindNotServed',
      `the apiserver does not serve kind ${kind} in ${apiVersion}: check the spelling, and that its CRD is installed`,
    );
  return resource({ group, version, kind, plural: found.name, namespaced: found.namespaced });
}
