/**
 * @module chaos/end-state
 * The end state of a step, comparable across runs: each root object's `status`, with what differs between two correct
 * runs taken out. Times (RFC 3339) become `<time>`, uids `<uid>`, the name of a live child becomes `<Kind>` (names from
 * `generateName` differ in every run), the trial's namespace within a string `<namespace>` (each run has its own),
 * arrays of such values are sorted, and the fields the user declares
 * non-deterministic (dotted paths under the object, such as `status.lastScheduleTime`) are dropped.
 *
 * Guarantees: two statuses that differ only in those ways compare equal; any other difference is reported with the
 * root and both values.
 */
import type { Manifest } from './objects.ts';

/** One root's status, normalized, by `Kind name` (the trial's namespace left out). */
export type EndState = ReadonlyMap<string, string>;

const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const UID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function normalize(value: unknown, names: ReadonlyMap<string, string>, namespace: string): unknown {
  if (typeof value === 'string') {
    if (TIME.test(value)) return '<time>';
    if (UID.test(value)) return '<uid>';
    const named = names.get(value) ?? value;
    return namespace === '' ? named : named.split(namespace).join('<namespace>');
  }
  if (Array.isArray(value)) {
    const items = value.map((v) => normalize(v, names, namespace));
    return items.every((v) => typeof v !== 'object' || v === null)
      ? items
          .map((v) => JSON.stringify(v))
          .sort()
          .map((v) => JSON.parse(v) as unknown)
      : items;
  }
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, normalize(v, names, namespace)]),
    );
  return value;
}

function drop(o: Record<string, unknown>, path: readonly string[]): void {
  const [head, ...rest] = path;
  if (head === undefined) return;
  if (rest.length === 0) {
    delete o[head];
    return;
  }
  const next = o[head];
  if (typeof next === 'object' && next !== null) drop(next as Record<string, unknown>, rest);
}

/** The end state of `roots`, given the live objects (their names become kinds) and the paths to leave out. */
export function endState(roots: readonly Manifest[], live: readonly Manifest[], ignore: readonly string[]): EndState {
  const names = new Map(live.map((o) => [o.metadata.name ?? '', `<${o.kind}>`] as const));
  for (const r of roots) names.delete(r.metadata.name ?? '');
  const out = new Map<string, string>();
  for (const root of roots) {
    const copy = structuredClone({ status: root.status }) as Record<string, unknown>;
    for (const path of ignore) drop(copy, path.split('.'));
    const namespace = root.metadata.namespace ?? '';
    out.set(`${root.kind} ${root.metadata.name}`, JSON.stringify(normalize(copy.status ?? null, names, namespace)));
  }
  return out;
}

/** A long status shortened for a message, around `at` (where it differs from the other). */
const clip = (json: string, at: number) => {
  const from = Math.max(0, Math.min(at - 150, json.length - 400));
  return `${from > 0 ? '…' : ''}${json.slice(from, from + 400)}${from + 400 < json.length ? '…' : ''}`;
};

/** The index of the first character where `a` and `b` differ. */
function firstDifference(a: string, b: string): number {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return i;
}

/** Where `trial` differs from `baseline`: one line per root. */
export function compareEndStates(baseline: EndState, trial: EndState): { object: string; message: string }[] {
  const out: { object: string; message: string }[] = [];
  for (const root of new Set([...baseline.keys(), ...trial.keys()])) {
    const [want, got] = [baseline.get(root), trial.get(root)];
    if (want === got) continue;
    const at = want === undefined || got === undefined ? 0 : firstDifference(got, want);
    out.push({
      object: root,
      message:
        want === undefined || got === undefined
          ? `${root}: ${got === undefined ? 'gone' : 'there'}, but ${want === undefined ? 'not there' : 'there'} in the fault-free run`
          : `${root}: status ${clip(got, at)}, the fault-free run's ${clip(want, at)}`,
    });
  }
  return out;
}
