/**
 * @module crd/versions
 * Kinds with several versions: each version has its own TypeBox schemas, exactly one is the storage version, and it
 * is also the *hub* every other version converts to and from (`toHub` / `fromHub`, typed by both schemas), as
 * controller-runtime's Hub/Convertible. `defineKind({ versions, storage, conversions })` (crd/kind) builds one.
 *
 * Guarantees:
 * - `convert(obj, apiVersion)` goes spoke → hub → spoke and never changes what the apiserver forbids a conversion to
 *   change: `apiVersion` and `kind` are set for the target, `metadata` is the input's, except `labels` and
 *   `annotations`, which a conversion may set (to carry fields a version cannot hold). Conversions never see or return
 *   the input object itself (they get a deep copy), so a conversion cannot corrupt a cached object.
 * - The CRD serves every version (unless `served: false`), marks the storage version, carries each version's schema,
 *   subresources and printer columns, and the webhook conversion stanza (`conversionReviewVersions: [v1]`) with the
 *   client config it is given — `crd()` without one fails with a `CrdSchemaError`, as a CRD whose conversion
 *   points nowhere would make every read of a non-storage version fail.
 * - A missing conversion, an unknown version or a storage version that is not listed fail at `defineKind`.
 *
 * Caveats: conversions are pure and synchronous (the apiserver converts on every read of another version: keep them
 * cheap). Round-trip fidelity is the author's job; `@opkit/runtime/testing/roundtrip`'s `checkRoundTrip` fuzzes it.
 */

import type { Static, TSchema } from '@sinclair/typebox';
import type { CustomResourceDefinition } from '../client/builtins.ts';
import type { Kind, KubeObject, ObjectMeta } from '../client/resource.ts';
import { OpkitError } from '../errors.ts';
import { markStatusSubresource } from '../internal/custom-kinds.ts';
import { normalize } from './check.ts';
import type { InputStatic } from './input.ts';
import {
  buildCrd,
  type CustomKind,
  type KindDefinition,
  type PrinterColumn,
  resourceOf,
  type ValidationRule,
} from './kind.ts';
import { CrdSchemaError } from './schema.ts';

/** One version of a multi-version kind. */
export interface VersionDefinition<Spec extends TSchema = TSchema, Status extends TSchema = TSchema> {
  /** The TypeBox schema of this version's `spec` (an object schema). */
  spec: Spec;
  /** The TypeBox schema of this version's `status` (an object schema). */
  status?: Status;
  /** Default true. */
  served?: boolean;
  /** Marks the version deprecated; kubectl prints the warning on every request to it. */
  deprecationWarning?: string;
  /** This version's subresources (`status`, `scale`), as `KindDefinition.subresources`. */
  subresources?: KindDefinition<Spec, Status>['subresources'];
  /** This version's `kubectl get` columns. */
  printerColumns?: PrinterColumn[];
  /** CEL rules of this version's spec. */
  validations?: ValidationRule[];
  /** CEL rules of this version's whole object (`KindDefinition.objectValidations`). */
  objectValidations?: ValidationRule[];
}

/** A kind's versions by name (`v1alpha1`, `v1`, …). */
export type VersionMap = Record<string, VersionDefinition<TSchema, TSchema>>;

/** The object type of one version. */
export type VersionObject<D> =
  D extends VersionDefinition<infer Spec, infer Status>
    ? { apiVersion?: string; kind?: string; metadata: ObjectMeta; spec: Static<Spec>; status?: Static<Status> }
    : never;

/** What a create of one version takes: its object, with the spec's defaulted fields optional (`Defaulted`). */
export type VersionInput<D> =
  D extends VersionDefinition<infer Spec, infer Status>
    ? Omit<VersionObject<D>, 'spec'> & { spec: InputStatic<Spec>; status?: Static<Status> }
    : never;

/** Converts one version to the hub (the storage version) and back. */
export interface Conversion<Spoke, Hub> {
  /** This version's object as the hub (storage) version; pure and synchronous. */
  toHub(obj: Spoke): Hub;
  /** The hub (storage) version's object as this version; pure and synchronous. */
  fromHub(hub: Hub): Spoke;
}

type Names = Omit<
  KindDefinition<TSchema, TSchema>,
  'version' | 'spec' | 'status' | 'subresources' | 'printerColumns' | 'validations' | 'objectValidations'
>;

/**
 * A custom resource with several versions, as `defineKind` takes it: the names of `KindDefinition`, each version's
 * schemas, the storage version and the conversions to and from it.
 */
export interface VersionedKindDefinition<V extends VersionMap, S extends keyof V & string> extends Names {
  /** Every version by name, each with its own schemas. */
  versions: V;
  /** The storage version, which is also the hub of the conversions. */
  storage: S;
  /** For every version but the storage one: to and from the storage version. */
  conversions: { [K in Exclude<keyof V & string, S>]: Conversion<VersionObject<V[K]>, VersionObject<V[S]>> };
}

/** Where the apiserver sends ConversionReviews: a Service in the cluster, or a URL (tests: loopback). */
export interface WebhookClientConfig {
  /** A Service in the cluster, by namespace and name (`path` and `port` optional; Kubernetes' default port is 443). */
  service?: { namespace: string; name: string; path?: string; port?: number };
  /** An `https://` URL reached directly (outside the cluster, or loopback in tests). */
  url?: string;
  /** PEM of the CA that signed the webhook's serving certificate, base64-encoded. */
  caBundle?: string;
}

/** Options of `crd()`. */
export interface CrdOptions {
  /** The conversion webhook's client config (required for a kind with several versions). */
  readonly conversion?: WebhookClientConfig;
}

/**
 * What `defineKind` returns for a kind with several versions: the kind as the storage version's `Kind`, with
 * one `Kind` per version and the conversion between them.
 */
export interface VersionedKind<V extends VersionMap, S extends keyof V & string>
  extends CustomKind<VersionObject<V[S]>, VersionInput<V[S]>> {
  /** The storage version, also the hub. */
  readonly storageVersion: S;
  /** The Kind of each version (`versions.v1alpha1` reads and writes that version). */
  readonly versions: { readonly [K in keyof V]: Kind<VersionObject<V[K]>, VersionInput<V[K]>> };
  /** Converts an object of any version of this kind to `apiVersion` (`group/version`); throws `ConversionError`. */
  convert(obj: KubeObject, apiVersion: string): KubeObject;
  crd(options?: CrdOptions): CustomResourceDefinition;
}

/** Why `convert` cannot convert an object. */
export type ConversionErrorCode =
  /** The object, or the target apiVersion, is not of this kind (another kind, or another group). */
  | 'WrongKind'
  /** An apiVersion of the kind's group that the kind does not have; the message lists the versions it has. */
  | 'UnknownVersion'
  /** A conversion function (`toHub` or `fromHub`) threw: its error is the `cause`. */
  | 'ConversionFailed';

/** An object that `convert` cannot convert; `code` says why. */
export class ConversionError extends OpkitError<ConversionErrorCode> {
  override readonly name = 'ConversionError';
}

type AnyConversion = Conversion<KubeObject, KubeObject>;

/** The kind `defineKind` makes of a definition with several versions (see the module comment). */
export function defineVersionedKind<V extends VersionMap, S extends keyof V & string>(
  def: VersionedKindDefinition<V, S>,
): VersionedKind<V, S> {
  const names = Object.keys(def.versions ?? {});
  const conversions = (def.conversions ?? {}) as Record<string, AnyConversion>;
  checkVersions(def, names, conversions);
  const { versions: _v, storage: _s, conversions: _c, ...common } = def;
  const single = (name: string): KindDefinition<TSchema, TSchema> => {
    const v = def.versions[name] as VersionDefinition;
    return normalize({
      ...common,
      version: name,
      spec: v.spec,
      ...(v.status !== undefined ? { status: v.status } : {}),
      ...(v.subresources !== undefined ? { subresources: v.subresources } : {}),
      ...(v.printerColumns !== undefined ? { printerColumns: v.printerColumns } : {}),
      ...(v.validations !== undefined ? { validations: v.validations } : {}),
      ...(v.objectValidations !== undefined ? { objectValidations: v.objectValidations } : {}),
    });
  };
  const storageDef = single(def.storage);
  // the storage version first, then the others in the order given (kubectl prefers by priority, not order)
  const entries = names.map((name) => {
    const crd = buildCrd(single(name));
    const v = def.versions[name] as VersionDefinition;
    const entry = crd.spec.versions[0] as CustomResourceDefinition['spec']['versions'][number];
    return {
      ...entry,
      served: v.served ?? true,
      storage: name === def.storage,
      ...(v.deprecationWarning !== undefined ? { deprecated: true, deprecationWarning: v.deprecationWarning } : {}),
    };
  });
  const base = buildCrd(storageDef);
  const json = JSON.stringify({ ...base, spec: { ...base.spec, versions: entries } });
  const resources = Object.fromEntries(
    names.map((name) => {
      const r = resourceOf<KubeObject, unknown>(storageDef, name);
      return [name, def.versions[name]?.subresources?.status === true ? markStatusSubresource(r) : r];
    }),
  ) as { [K in keyof V]: Kind<VersionObject<V[K]>, VersionInput<V[K]>> };
  const kind = Object.freeze({
    ...resourceOf<VersionObject<V[S]>, VersionInput<V[S]>>(storageDef, def.storage),
    definition: storageDef,
    storageVersion: def.storage,
    versions: Object.freeze(resources),
    convert: converterOf(storageDef, names, def.storage, conversions),
    crd: (options: CrdOptions = {}) =>
      withConversion(JSON.parse(json) as CustomResourceDefinition, storageDef, names.length, options),
  });
  return storageDef.subresources?.status === true ? markStatusSubresource(kind) : kind;
}

/** Throws `CrdSchemaError` unless the versions, the storage version and the conversions fit together. */
function checkVersions(
  def: VersionedKindDefinition<VersionMap, string>,
  names: readonly string[],
  conversions: Readonly<Record<string, AnyConversion>>,
): void {
  if (names.length === 0) throw new CrdSchemaError('versions', 'list at least one version');
  if (!names.includes(def.storage)) {
    throw new CrdSchemaError(
      'storage',
      `${JSON.stringify(def.storage)} must be one of the versions (${names.join(', ')})`,
    );
  }
  for (const name of names) {
    if (name === def.storage) continue;
    const c = conversions[name];
    if (typeof c?.toHub !== 'function' || typeof c.fromHub !== 'function') {
      throw new CrdSchemaError(`conversions.${name}`, `needs toHub and fromHub (to and from ${def.storage})`);
    }
  }
  for (const name of Object.keys(conversions)) {
    if (!names.includes(name) || name === def.storage) {
      throw new CrdSchemaError(`conversions.${name}`, `${name} is not a version other than the storage version`);
    }
  }
  if (def.versions[def.storage]?.served === false) {
    throw new CrdSchemaError(`versions.${def.storage}.served`, 'the storage version must be served');
  }
}

/** `convert` of a versioned kind: through the hub (`storage`), each step's output settled (see `settle`). */
function converterOf(
  storageDef: KindDefinition<TSchema, TSchema>,
  names: readonly string[],
  storage: string,
  conversions: Readonly<Record<string, AnyConversion>>,
): (obj: KubeObject, apiVersion: string) => KubeObject {
  const versionOf = (apiVersion: unknown, what: string): string => {
    const [group, version] = typeof apiVersion === 'string' ? apiVersion.split('/', 2) : [];
    if (group !== storageDef.group || version === undefined) {
      throw new ConversionError('WrongKind', `${what} ${String(apiVersion)} is not in group ${storageDef.group}`);
    }
    if (!names.includes(version)) {
      throw new ConversionError(
        'UnknownVersion',
        `${what} ${apiVersion as string}: ${storageDef.kind} has no version ${version} (it has ${names.join(', ')})`,
      );
    }
    return version;
  };
  return (obj, apiVersion) => {
    if (obj.kind !== storageDef.kind) {
      throw new ConversionError('WrongKind', `cannot convert a ${String(obj.kind)} as a ${storageDef.kind}`);
    }
    const from = versionOf(obj.apiVersion, 'object of');
    const to = versionOf(apiVersion, 'target');
    const input = structuredClone(obj);
    if (from === to) return input;
    const step = (o: KubeObject, version: string, fn: ((x: KubeObject) => KubeObject) | undefined): KubeObject => {
      let out: KubeObject;
      try {
        out = fn ? fn(structuredClone(o)) : o;
      } catch (err) {
        throw new ConversionError(
          'ConversionFailed',
          `converting ${storageDef.kind} ${o.metadata?.name ?? ''} to ${version}: ${(err as Error).message}`,
          { cause: err },
        );
      }
      return settle(out, input, `${storageDef.group}/${version}`, storageDef.kind);
    };
    const hub = from === storage ? input : step(input, storage, conversions[from]?.toHub);
    return to === storage ? hub : step(hub, to, conversions[to]?.fromHub);
  };
}

/** The CRD with its conversion webhook (required with several versions); throws `CrdSchemaError` without one. */
function withConversion(
  crd: CustomResourceDefinition,
  storageDef: KindDefinition<TSchema, TSchema>,
  versions: number,
  options: CrdOptions,
): CustomResourceDefinition {
  if (versions === 1 && options.conversion === undefined) return crd;
  const cc = options.conversion;
  if (cc === undefined || (cc.service === undefined) === (cc.url === undefined)) {
    throw new CrdSchemaError(
      'conversion',
      `${storageDef.plural}.${storageDef.group} has several versions: pass the conversion webhook's client config, crd({ conversion: { service: { namespace, name } } }) or { url }`,
    );
  }
  const clientConfig = {
    ...(cc.service !== undefined
      ? {
          service: {
            namespace: cc.service.namespace,
            name: cc.service.name,
            path: cc.service.path ?? '/convert',
            port: cc.service.port ?? 443,
          },
        }
      : { url: cc.url }),
    ...(cc.caBundle !== undefined ? { caBundle: cc.caBundle } : {}),
  };
  return {
    ...crd,
    spec: {
      ...crd.spec,
      conversion: {
        strategy: 'Webhook',
        webhook: { conversionReviewVersions: ['v1'], clientConfig },
      },
    },
  } as CustomResourceDefinition;
}

/** The converted object with the target's apiVersion and kind and the source's metadata (labels, annotations aside). */
function settle(out: KubeObject, source: KubeObject, apiVersion: string, kind: string): KubeObject {
  const meta: Record<string, unknown> = { ...(source.metadata as Record<string, unknown>) };
  const changed = out.metadata as Record<string, unknown> | undefined;
  for (const key of ['labels', 'annotations'] as const) {
    if (changed && key in changed) {
      const value = changed[key];
      if (value === undefined) delete meta[key];
      else meta[key] = value;
    }
  }
  return { ...out, apiVersion, kind, metadata: meta } as KubeObject;
}
