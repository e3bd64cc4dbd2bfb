/**
 * @module client/apply
 * Server-side apply of arbitrary manifests (a multi-document YAML, or objects), the way `kubectl apply
 * --server-side` does it: each object's resource is found by discovery (`kindFor`: group/version → plural and scope), so
 * any kind works, custom ones included once their CRD is served. Objects are applied in the order given; a CRD is
 * waited for until Established before the next object, so a file can carry a CRD and objects of its kind. `deleteAll`
 * removes manifests in reverse order and ignores what is already gone.
 */

import yaml from 'js-yaml';
import { OpkitError } from '../errors.ts';
import type { Client } from './client.ts';
import { DiscoveryError, kindFor } from './discover.ts';
import { isNotFound } from './errors.ts';
import type { Kind, KubeObject } from './resource.ts';

/** Why a manifest cannot be applied. */
export type ManifestErrorCode =
  /** A document lacks apiVersion, kind or metadata.name, is not YAML, or names a kind the apiserver does not serve. */
  'InvalidManifest';

/**
 * A manifest that cannot be applied as given (code `InvalidManifest`): a document without apiVersion, kind or name, or
 * a kind the apiserver does not serve.
 */
export class ManifestError extends OpkitError<ManifestErrorCode> {
  override readonly name = 'ManifestError';

  constructor(message: string, options?: { cause?: unknown }) {
    super('InvalidManifest', message, options);
  }
}

/** The objects of a multi-document YAML (empty documents skipped); each must have apiVersion, kind, metadata.name. */
export function parseManifests(text: string, source = 'manifest'): KubeObject[] {
  const out: KubeObject[] = [];
  let index = 0;
  for (const doc of yaml.loadAll(text)) {
    index += 1;
    if (doc === null || doc === undefined) continue;
    const o = doc as Partial<KubeObject>;
    if (typeof o !== 'object' || !o.apiVersion || !o.kind || !o.metadata?.name) {
      throw new ManifestError(`${source}: document ${index} needs apiVersion, kind and metadata.name`);
    }
    out.push(o as KubeObject);
  }
  return out;
}

/**
 * Applies manifests of any kind with server-side apply under one field manager, finding each kind's resource by
 * discovery (see the module comment).
 *
 * @showModuleComment
 */
export class Applier {
  readonly #client: Client;
  readonly #fieldManager: string;

  constructor(client: Client, fieldManager: string) {
    this.#client = client;
    this.#fieldManager = fieldManager;
  }

  /**
   * The Kind of `apiVersion`/`kind`, by discovery (`kindFor`; `refresh`: ask the apiserver again); one not served is a
   * `ManifestError`.
   */
  async resourceFor(apiVersion: string, kind: string, refresh = false): Promise<Kind> {
    try {
      return await kindFor(this.#client, apiVersion, kind, { refresh });
    } catch (err) {
      if (err instanceof DiscoveryError) throw new ManifestError(err.message, { cause: err });
      throw err;
    }
  }

  /** Applies every object (server-side apply, forced), waiting for CRDs to be Established. */
  async applyAll(objects: readonly KubeObject[], options: { namespace?: string } = {}): Promise<KubeObject[]> {
    const out: KubeObject[] = [];
    for (const obj of objects) {
      const r = await this.resourceFor(obj.apiVersion ?? '', obj.kind ?? '');
      const body =
        r.namespaced && !obj.metadata.namespace && options.namespace
          ? { ...obj, metadata: { ...obj.metadata, namespace: options.namespace } }
          : obj;
      const applied = await this.#client.apply(r, body, { fieldManager: this.#fieldManager, force: true });
      out.push(applied);
      if (obj.kind === 'CustomResourceDefinition') await this.#established(r, obj.metadata.name ?? '');
    }
    return out;
  }

  /** Deletes every object, last first; absent ones are fine. */
  async deleteAll(objects: readonly KubeObject[]): Promise<number> {
    let deleted = 0;
    for (const obj of [...objects].reverse()) {
      try {
        const r = await this.resourceFor(obj.apiVersion ?? '', obj.kind ?? '');
        const ref = r.namespaced
          ? { namespace: obj.metadata.namespace ?? 'default', name: obj.metadata.name ?? '' }
          : { name: obj.metadata.name ?? '' };
        await this.#client.delete(r, ref, { propagationPolicy: 'Background' });
        deleted += 1;
      } catch (err) {
        if (isNotFound(err) || err instanceof ManifestError) continue;
        throw err;
      }
    }
    return deleted;
  }

  async #established(r: Kind, name: string): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const crd = (await this.#client.get(r, { name })) as KubeObject & {
        status?: { conditions?: { type: string; status: string }[] };
      };
      if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return;
      if (Date.now() > deadline)
        throw new ManifestError(`the CustomResourceDefinition ${name} did not become Established within 60 s`);
      await new Promise((res) => setTimeout(res, 200));
    }
  }
}
