/**
 * @module crd/descriptions
 * `maxDescLen` of a kind: the descriptions of a CRD's schema cut to a length, as controller-gen's `crd:maxDescLen`
 * cuts them, so a CRD that embeds built-in types (whose upstream descriptions are long) stays small: within the 256 KiB
 * of annotations a client-side `kubectl apply` keeps, and quick to send, store and watch.
 *
 * Guarantees: only the `description` keyword of schema nodes changes (a property named `description` is a property);
 * 0 removes every description; a longer one is cut after its last sentence end (`.`, `!`, `?`) within the length, else
 * at its last space with `...` appended, else at the length with `...`; a shorter one is kept whole. The input is not
 * changed.
 */

type Json = Record<string, unknown>;

/** `text` cut to `max` characters (see the module comment); undefined when `max` is 0. */
export function cutDescription(text: string, max: number): string | undefined {
  if (max === 0) return undefined;
  if (text.length <= max) return text;
  const kept = text.slice(0, max);
  const sentence = Math.max(kept.lastIndexOf('. '), kept.lastIndexOf('! '), kept.lastIndexOf('? '));
  const end = /[.!?]$/.test(kept) ? kept.length - 1 : sentence;
  if (end > 0) return kept.slice(0, end + 1);
  const space = kept.search(/\s\S*$/);
  return `${(space > 0 ? kept.slice(0, space) : kept).trimEnd()}...`;
}

/** A copy of the schema `node` with every description cut to `max` characters. */
export function trimDescriptions(node: Json, max: number): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'description' && typeof value === 'string') {
      const cut = cutDescription(value, max);
      if (cut !== undefined) out.description = cut;
    } else if (key === 'properties' && isObject(value)) {
      out.properties = Object.fromEntries(
        Object.entries(value).map(([name, p]) => [name, isObject(p) ? trimDescriptions(p, max) : p]),
      );
    } else if ((key === 'items' || key === 'additionalProperties' || key === 'not') && isObject(value)) {
      out[key] = trimDescriptions(value, max);
    } else if ((key === 'allOf' || key === 'anyOf' || key === 'oneOf') && Array.isArray(value)) {
      out[key] = value.map((m) => (isObject(m) ? trimDescriptions(m, max) : m));
    } else out[key] = value;
  }
  return out;
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
