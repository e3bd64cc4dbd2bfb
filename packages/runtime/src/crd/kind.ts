/**
 * @module crd/kind
 * `defineKind`: a custom resource described once, in code — group, names, scope and TypeBox schemas for `spec` and
 * `status`. Its result is the kind itself, one constant (`export const AppServices = defineKind({...})`): a
 * `Kind` that the client, the cache, `mgr.controller`, `permission` and `ctx.create` take as they take `Pods`,
 * which also carries the TypeScript type of its objects (`ObjectOf<typeof AppServices>`), its definition and the
 * CustomResourceDefinition manifest generated from the schemas (`crd()`: no hand-written YAML that can drift).
 *
 * Guarantees: the definition is checked when `defineKind` runs (names, version, scope, scale paths, printer columns,
 * CEL rules, and the schemas via `structuralSchema`), so a bad kind fails at start-up with a `CrdSchemaError` naming
 * the field at fault. `crd()` returns a fresh, byte-stable object on every call: (here) one served+storage version, optional
 * fields left out rather than `undefined`, an `Age` printer column appended unless one is defined.
 *
 * Several versions with conversions: see crd/versions. Caveats: CEL rules and regular expressions are compiled by the
 * apiserver only when the CRD is applied. The CRD is typed with the generated `CustomResourceDefinition`
 * (`@opkit/runtime/kinds`), whose schema fields have their wire names (`x-kubernetes-validations`, `default`): send it
 * as the JSON it is, not through @kubernetes/client-node's ObjectSerializer (which expects `x_kubernetes_validations`).
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import type { CustomResourceDefinition } from '../client/builtins.ts';
import { type Kind, type KubeObject, type ObjectMeta, resource } from '../client/resource.ts';
import { markStatusSubresource } from '../internal/custom-kinds.ts';
import { invalid, normalize, show } from './check.ts';
import { trimDescriptions } from './descriptions.ts';
import type { KindInput } from './input.ts';
import { structuralSchema } from './schema.ts';
import {
  type CrdOptions,
  defineVersionedKind,
  type VersionedKind,
  type VersionedKindDefinition,
  type VersionMap,
} from './versions.ts';

/** A column of `kubectl get` for the kind (`additionalPrinterColumns`). */
export interface PrinterColumn {
  /** The column's header, e.g. `Ready`. */
  name: string;
  /** How the value is shown (`date` as an age). */
  type: 'integer' | 'number' | 'string' | 'boolean' | 'date';
  /** A JSONPath into the object, e.g. `.status.replicas`. */
  jsonPath: string;
  /** What the column shows (`kubectl explain`). */
  description?: string;
  /** 0 (default) shows in the standard view; greater values only with `-o wide`. */
  priority?: number;
  /** An OpenAPI format refining `type`, e.g. `int32` or `password`. */
  format?: string;
}

/**
 * A CEL validation rule (`x-kubernetes-validations`), checked by the apiserver on every write: of the spec (`validations`)
 * or of any schema node (`Validated`).
 */
export interface ValidationRule {
  /** A CEL expression over `self` (the spec), e.g. `self.minReplicas <= self.replicas`. */
  rule: string;
  /** The message when the rule fails (default: the rule itself). */
  message?: string;
  /** A CEL expression that computes the message, e.g. `'replicas must be at most ' + string(self.maxReplicas)`. */
  messageExpression?: string;
  /**
   * The field reported on failure, relative to the node the rule is on, and one its schema declares: `.replicas` on
   * the spec; `.spec.replicas` or `.metadata.name` (or `.metadata.generateName`, which the CRD then declares) on the
   * whole object. Without it, a rule on the whole object reports no field (the apiserver writes `<nil>`): word the
   * message so that it names the field, e.g. `metadata.name must be at most 63 characters`.
   */
  fieldPath?: string;
  /** FieldValueInvalid (default), FieldValueForbidden, FieldValueRequired or FieldValueDuplicate. */
  reason?: string;
  /**
   * For a transition rule (one that reads `oldSelf`): also run it on create, and when the old value is absent, with
   * `oldSelf` an optional (`oldSelf.hasValue()`, `oldSelf.value()`, `oldSelf.orValue(x)`). Without it, a transition
   * rule runs only on an update where the node has an old value.
   */
  optionalOldSelf?: boolean;
}

/**
 * A custom resource with one version, as `defineKind` takes it: names, scope, the TypeBox schemas of `spec` and
 * `status`, subresources, printer columns and CEL rules. Checked when `defineKind` runs.
 */
export interface KindDefinition<Spec extends TSchema, Status extends TSchema> {
  /** API group: a DNS subdomain with at least one dot, e.g. `app.example.com`. */
  group: string;
  /** `v1`, `v1alpha1`, `v2beta3`, … */
  version: string;
  /** UpperCamelCase, e.g. `AppService`. */
  kind: string;
  /** Lower-case plural used in paths, e.g. `appservices`. */
  plural: string;
  /** Default `kind.toLowerCase()`. */
  singular?: string;
  /** Default `${kind}List`. */
  listKind?: string;
  /** Short names for kubectl, e.g. `['as']` for `kubectl get as`. */
  shortNames?: string[];
  /** Categories the kind belongs to, e.g. `['all']` to be listed by `kubectl get all`. */
  categories?: string[];
  /** Default `Namespaced`. */
  scope?: 'Namespaced' | 'Cluster';
  /** Description of the resource (the schema root's `description`, shown by `kubectl explain`). */
  description?: string;
  /**
   * The CRD's descriptions longer than this many characters are cut (controller-gen's `crd:maxDescLen`): after the
   * last sentence end within it, else at the last space with `...`; 0 leaves them out. Default: kept whole. A kind
   * that embeds built-in types (`@opkit/runtime/schemas/*`) carries their upstream descriptions, which `kubectl explain`
   * shows; `maxDescLen: 0` keeps its CRD small, as kubebuilder's CronJob CRD is made.
   */
  maxDescLen?: number;
  /** The TypeBox schema of `spec` (an object schema): the CRD's structural schema and the type of `obj.spec`. */
  spec: Spec;
  /** The TypeBox schema of `status` (an object schema), required for the status subresource. */
  status?: Status;
  /**
   * The subresources the apiserver serves for the kind. `status: true`: the status is written only through
   * `/status` (`updateStatus`, `patchStatus`, `ctx.status`), and a write of the object ignores it. `scale`: `/scale`,
   * for `kubectl scale`, `Client.scale` and a HorizontalPodAutoscaler — without it they answer NotFound as if the
   * object did not exist. Its paths are checked against the schemas: `specReplicasPath` an integer under `.spec`,
   * `statusReplicasPath` an integer under `.status`, `labelSelectorPath` (the selector of the kind's pods, in string
   * form, which an autoscaler needs) a string under `.status` or `.spec`.
   *
   * @example
   * ```ts
   * import { defineKind } from '@opkit/runtime';
   * import { Type } from '@sinclair/typebox';
   *
   * export const Websites = defineKind({
   *   group: 'example.com',
   *   version: 'v1',
   *   kind: 'Website',
   *   plural: 'websites',
   *   spec: Type.Object({ replicas: Type.Integer({ minimum: 0, format: 'int32' }) }),
   *   status: Type.Object({
   *     replicas: Type.Optional(Type.Integer({ format: 'int32' })),
   *     selector: Type.Optional(Type.String()),
   *   }),
   *   subresources: {
   *     status: true,
   *     // kubectl scale website/home --replicas=3
   *     scale: {
   *       specReplicasPath: '.spec.replicas',
   *       statusReplicasPath: '.status.replicas',
   *       labelSelectorPath: '.status.selector',
   *     },
   *   },
   * });
   * ```
   */
  subresources?: {
    /** Serve `/status`: the status is written only through it. */
    status?: boolean;
    /** Serve `/scale`, reading and writing the replicas at these JSONPaths. */
    scale?: {
      /** The desired replicas, an integer under `.spec`, e.g. `.spec.replicas`. */
      specReplicasPath: string;
      /** The observed replicas, an integer under `.status`, e.g. `.status.replicas`. */
      statusReplicasPath: string;
      /** The selector of the kind's pods in string form, under `.status` or `.spec`, e.g. `.status.selector`. */
      labelSelectorPath?: string;
    };
  };
  /** Columns of `kubectl get` (an `Age` column is appended unless one is defined). */
  printerColumns?: PrinterColumn[];
  /** x-kubernetes-validations on the spec object, for CEL rules spanning fields. */
  validations?: ValidationRule[];
  /**
   * x-kubernetes-validations on the whole object: rules that read `self.metadata.name` (or `generateName`), or compare
   * the spec with the status, e.g. `oldSelf.status` in a transition rule.
   */
  objectValidations?: ValidationRule[];
}

/** An object of a custom kind as the API returns it. */
export type KindObject<Spec extends TSchema, Status extends TSchema> = {
  /** `<group>/<version>`. */
  apiVersion?: string;
  /** The kind, e.g. `AppService`. */
  kind?: string;
  /** Name, namespace, labels, annotations, owners, finalizers, resourceVersion, … */
  metadata: ObjectMeta;
  /** The desired state, typed by the kind's spec schema. */
  spec: Static<Spec>;
  /** The observed state, typed by the kind's status schema; absent until a controller writes it. */
  status?: Static<Status>;
};

/**
 * What `defineKind` returns: the kind as the client sees it (a `Kind`: pass it to `client.get`,
 * `mgr.controller`, `permission`, `ctx.create`, …), with its definition and its CRD.
 */
export interface CustomKind<T extends KubeObject, I = T> extends Kind<T, I> {
  /** The definition with defaults applied (`singular`, `listKind`, `scope`). */
  readonly definition: KindDefinition<TSchema, TSchema>;
  /**
   * The CustomResourceDefinition manifest (apiVersion apiextensions.k8s.io/v1). `options.conversion` is the conversion
   * webhook's client config, required by (and only used for) kinds with several versions.
   */
  crd(options?: CrdOptions): CustomResourceDefinition;
}

type Json = Record<string, unknown>;
type CrdVersion = CustomResourceDefinition['spec']['versions'][number];
type JSONSchemaProps = NonNullable<NonNullable<CrdVersion['schema']>['openAPIV3Schema']>;

const SIMPLE_PATH = /^(\.[A-Za-z_][A-Za-z0-9_-]*)+$/;
const AGE: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

/**
 * Describes a custom resource: the kind itself (a `Kind`), with its object type and its generated
 * CustomResourceDefinition. With `versions`, `storage` and `conversions` instead of `version` / `spec` / `status`, a
 * kind with several versions (crd/versions), whose `Kind` is the storage version's.
 */
export function defineKind<Spec extends TSchema, Status extends TSchema>(
  def: KindDefinition<Spec, Status>,
): CustomKind<KindObject<Spec, Status>, KindInput<Spec, Status>>;
export function defineKind<V extends VersionMap, S extends keyof V & string>(
  def: VersionedKindDefinition<V, S>,
): VersionedKind<V, S>;
export function defineKind(
  def: KindDefinition<TSchema, TSchema> | VersionedKindDefinition<VersionMap, string>,
): CustomKind<KubeObject> {
  if ('versions' in def) return defineVersionedKind(def);
  return defineSingleVersion(def);
}

function defineSingleVersion<Spec extends TSchema, Status extends TSchema>(
  def: KindDefinition<Spec, Status>,
): CustomKind<KindObject<Spec, Status>, KindInput<Spec, Status>> {
  const definition = normalize(def);
  const json = JSON.stringify(buildCrd(definition));
  const kind = Object.freeze({
    ...resourceOf<KindObject<Spec, Status>, KindInput<Spec, Status>>(definition, definition.version),
    definition,
    crd: (): CustomResourceDefinition => JSON.parse(json) as CustomResourceDefinition,
  });
  return definition.subresources?.status === true ? markStatusSubresource(kind) : kind;
}

/** The `Kind` of one version of a normalized definition. */
export function resourceOf<T extends KubeObject, I>(
  def: KindDefinition<TSchema, TSchema>,
  version: string,
): Kind<T, I> {
  const { group, kind, plural } = def;
  return resource<T, I>({ group, version, kind, plural, namespaced: def.scope !== 'Cluster' });
}

/** The CRD of one served+storage version (checked: the schemas, the status subresource, the scale paths). */
export function buildCrd(def: KindDefinition<TSchema, TSchema>): CustomResourceDefinition {
  const { root, spec, status } = rootSchema(def);
  const subresources: Json = {};
  if (def.subresources?.status === true) subresources.status = {};
  const scale = def.subresources?.scale;
  if (scale !== undefined) subresources.scale = scaleSubresource(scale, spec, status);

  const columns = [...(def.printerColumns ?? [])];
  if (!columns.some((c) => c.name === AGE.name)) columns.push(AGE);

  const version: CrdVersion = {
    name: def.version,
    served: true,
    storage: true,
    schema: {
      openAPIV3Schema: (def.maxDescLen === undefined
        ? root
        : trimDescriptions(root, def.maxDescLen)) as JSONSchemaProps,
    },
    ...(Object.keys(subresources).length > 0 ? { subresources } : {}),
    additionalPrinterColumns: columns.map(columnJson),
  };

  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${def.plural}.${def.group}` },
    spec: {
      group: def.group,
      names: {
        kind: def.kind,
        listKind: def.listKind ?? `${def.kind}List`,
        plural: def.plural,
        singular: def.singular ?? def.kind.toLowerCase(),
        ...(def.shortNames !== undefined && def.shortNames.length > 0 ? { shortNames: [...def.shortNames] } : {}),
        ...(def.categories !== undefined && def.categories.length > 0 ? { categories: [...def.categories] } : {}),
      },
      scope: def.scope ?? 'Namespaced',
      versions: [version],
    },
  };
}

/** The object's schema (apiVersion, kind, metadata, spec with its CEL rules, status), with spec's and status's. */
function rootSchema(def: KindDefinition<TSchema, TSchema>): { root: Json; spec: Json; status: Json | undefined } {
  const specInput =
    def.validations !== undefined && def.validations.length > 0
      ? { ...def.spec, 'x-kubernetes-validations': [...existingRules(def.spec), ...def.validations] }
      : def.spec;
  const spec = structuralSchema(specInput, 'spec');
  if (spec.type !== 'object') invalid('spec', 'must be an object schema (Type.Object)');
  const status = def.status === undefined ? undefined : structuralSchema(def.status, 'status');
  if (status !== undefined && status.type !== 'object') invalid('status', 'must be an object schema (Type.Object)');
  if (def.subresources?.status === true && status === undefined) {
    invalid('subresources.status', 'the status subresource needs a status schema (status: Type.Object(…))');
  }
  const properties: Json = {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: metadataSchema(def.objectValidations ?? []),
    spec,
    ...(status !== undefined ? { status } : {}),
  };
  const rules =
    def.objectValidations !== undefined && def.objectValidations.length > 0
      ? structuralSchema(Type.Object({}, { 'x-kubernetes-validations': def.objectValidations }), 'objectValidations')[
          'x-kubernetes-validations'
        ]
      : undefined;
  const root: Json = {
    type: 'object',
    ...(def.description !== undefined ? { description: def.description } : {}),
    properties,
    ...(Array.isArray(spec.required) && spec.required.length > 0 ? { required: ['spec'] } : {}),
    ...(rules !== undefined ? { 'x-kubernetes-validations': rules } : {}),
  };
  return { root, spec, status };
}

/**
 * The root's `metadata`: an object, declaring `name` or `generateName` (the only fields the apiserver lets a CRD
 * declare in it) when a rule on the whole object names it as its `fieldPath`, which must be a declared field.
 */
function metadataSchema(rules: readonly ValidationRule[]): Json {
  const named = ['name', 'generateName'].filter((f) => rules.some((r) => r.fieldPath === `.metadata.${f}`));
  if (named.length === 0) return { type: 'object' };
  return { type: 'object', properties: Object.fromEntries(named.map((f) => [f, { type: 'string' }])) };
}

/** Rules already set on the spec schema with TypeBox options; `validations` are appended after them. */
function existingRules(spec: TSchema): unknown[] {
  const rules: unknown = (spec as Json)['x-kubernetes-validations'];
  return Array.isArray(rules) ? rules : [];
}

function scaleSubresource(
  scale: NonNullable<NonNullable<KindDefinition<TSchema, TSchema>['subresources']>['scale']>,
  spec: Json,
  status: Json | undefined,
): Json {
  const roots = { spec, status };
  const check = (path: unknown, field: string, allowed: ('spec' | 'status')[], type: string): string => {
    const where = `subresources.scale.${field}`;
    const prefix = allowed.find((p) => typeof path === 'string' && path.startsWith(`.${p}.`));
    if (typeof path !== 'string' || prefix === undefined || !SIMPLE_PATH.test(path)) {
      invalid(where, `${show(path)} must be a simple path under ${allowed.map((p) => `.${p}.`).join(' or ')}`);
    }
    const found = resolve(roots[prefix], path.slice(prefix.length + 2).split('.'));
    if (found === undefined) invalid(where, `${path} is not a field of the ${prefix} schema`);
    if (found.type !== undefined && found.type !== type) {
      invalid(where, `${path} must be of type ${type}, not ${String(found.type)}`);
    }
    return path;
  };
  return {
    specReplicasPath: check(scale.specReplicasPath, 'specReplicasPath', ['spec'], 'integer'),
    statusReplicasPath: check(scale.statusReplicasPath, 'statusReplicasPath', ['status'], 'integer'),
    ...(scale.labelSelectorPath !== undefined
      ? { labelSelectorPath: check(scale.labelSelectorPath, 'labelSelectorPath', ['status', 'spec'], 'string') }
      : {}),
  };
}

/** The schema of a field by its path segments; a free-form (preserve-unknown-fields) node admits any field. */
function resolve(node: Json | undefined, segments: string[]): Json | undefined {
  let current = node;
  for (const segment of segments) {
    if (current === undefined) return undefined;
    const properties = current.properties as Json | undefined;
    const next = properties?.[segment];
    if (next === undefined || next === null || typeof next !== 'object') {
      return current['x-kubernetes-preserve-unknown-fields'] === true ? {} : undefined;
    }
    current = next as Json;
  }
  return current;
}

function columnJson(c: PrinterColumn): { name: string; type: string; jsonPath: string } & Json {
  return {
    name: c.name,
    type: c.type,
    jsonPath: c.jsonPath,
    ...(c.description !== undefined ? { description: c.description } : {}),
    ...(c.format !== undefined ? { format: c.format } : {}),
    ...(c.priority !== undefined ? { priority: c.priority } : {}),
  };
}
