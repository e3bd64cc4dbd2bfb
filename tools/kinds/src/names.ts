/**
 * @module tools/kinds/names
 * The TypeScript name of every generated definition, and the file it goes to. A definition is named by the last
 * segment of its id (`io.k8s.api.core.v1.PodSpec` → `PodSpec`); when two share that name, a kind wins over a field
 * type, then the group version listed first in `GROUP_VERSIONS` (the core group, then apps, …), and every other one is
 * prefixed with its package and version (`io.k8s.api.events.v1.Event` → `EventsV1Event`), as is every definition
 * whose name another entry of the runtime exports (`RESERVED`).
 *
 * Guarantees: names are unique across every generated file (they are re-exported from one entry); the same input
 * always gives the same names.
 */
import { KindsGenError } from './openapi.ts';
import { GROUP_VERSIONS } from './select.ts';

/** Where a definition id puts its type: the file (package) and version. */
export interface DefinitionPlace {
  /** The generated file's base name: `core`, `apps`, `meta`, `apiextensions`, … */
  readonly file: string;
  readonly version: string;
  /** The last segment of the id. */
  readonly short: string;
}

/** The definition ids of the packages generated: the package, its version and the short name. */
const PLACES: readonly RegExp[] = [
  /^io\.k8s\.api\.([a-z0-9]+)\.(v[a-z0-9]+)\.(\w+)$/,
  /^io\.k8s\.apimachinery\.pkg\.apis\.(meta)\.(v1)\.(\w+)$/,
  /^io\.k8s\.apiextensions-apiserver\.pkg\.apis\.(apiextensions)\.(v1)\.(\w+)$/,
];

/** The file, version and short name of a definition id. */
export function placeOf(id: string): DefinitionPlace {
  for (const re of PLACES) {
    const m = re.exec(id);
    if (m) return { file: m[1] as string, version: m[2] as string, short: m[3] as string };
  }
  throw new KindsGenError(`definition ${id} is of no package the generator knows`);
}

const pascal = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

/** The precedence of a definition's package and version: meta first, then the order of `GROUP_VERSIONS`. */
function rank(place: DefinitionPlace): number {
  if (place.file === 'meta') return -1;
  const i = GROUP_VERSIONS.findIndex((gv) => gv.file === place.file && gv.version === place.version);
  return i < 0 ? GROUP_VERSIONS.length : i;
}

/** The prefix a definition takes when its short name is taken: `EventsV1`, `AutoscalingV1`. */
function prefixOf(place: DefinitionPlace): string {
  return `${pascal(place.file)}${pascal(place.version)}`;
}

/**
 * Names other entries of `@opkit/runtime` export for types of their own (each name has one entry, test/layers.test.ts):
 * a definition of that name always takes its prefix (`MetaV1LabelSelector`, `RbacV1PolicyRule`).
 */
const RESERVED: ReadonlySet<string> = new Set([
  'Condition',
  'DeleteOptions',
  'LabelSelector',
  'PolicyRule',
  'ValidationRule',
  'WebhookClientConfig',
]);

/**
 * The TypeScript name of each definition id of `ids`; `kinds` (definition ids of kinds) win a shared name, and no
 * definition takes a name of `reserved` unprefixed.
 */
export function assignNames(
  ids: Iterable<string>,
  kinds: ReadonlySet<string>,
  reserved: ReadonlySet<string> = RESERVED,
): Map<string, string> {
  const byShort = new Map<string, string[]>();
  for (const id of ids) {
    const { short } = placeOf(id);
    byShort.set(short, [...(byShort.get(short) ?? []), id]);
  }
  const names = new Map<string, string>();
  for (const [short, group] of byShort) {
    const ordered = [...group].sort(
      (a, b) => Number(kinds.has(b)) - Number(kinds.has(a)) || rank(placeOf(a)) - rank(placeOf(b)) || (a < b ? -1 : 1),
    );
    ordered.forEach((id, i) => {
      names.set(id, i === 0 && !reserved.has(short) ? short : `${prefixOf(placeOf(id))}${short}`);
    });
  }
  const seen = new Set<string>();
  for (const name of names.values()) {
    if (seen.has(name)) throw new KindsGenError(`two definitions are both named ${name}`);
    seen.add(name);
  }
  return names;
}

/**
 * The name of a kind's resource constant: its plural spelled with the kind's capitals (`pods` of `Pod` → `Pods`,
 * `networkpolicies` of `NetworkPolicy` → `NetworkPolicies`), after the kind's type name's prefix if it has one.
 */
export function resourceConstName(typeName: string, kind: string, plural: string): string {
  const lower = kind.toLowerCase();
  let common = 0;
  while (common < lower.length && common < plural.length && lower[common] === plural[common]) common++;
  const prefix = typeName.slice(0, typeName.length - kind.length);
  return `${prefix}${kind.slice(0, common)}${plural.slice(common)}`;
}
