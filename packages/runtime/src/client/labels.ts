/**
 * @module client/labels
 * Label selectors: parse the string form the API uses (`a=b,c!=d,e in (x,y),f notin (z),g,!h`), build it from a
 * `matchLabels` record or a LabelSelector object, and match labels against it (for reads from the cache). A malformed
 * selector is a `SelectorError` naming the requirement at fault.
 */
import { OpkitError } from '../errors.ts';

export type Operator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';

export interface Requirement {
  readonly key: string;
  readonly operator: Operator;
  readonly values: readonly string[];
}

/** The LabelSelector of the Kubernetes API (metav1.LabelSelector). */
export interface LabelSelector {
  /** Labels an object must have, with these values. */
  readonly matchLabels?: Readonly<Record<string, string>>;
  /** Requirements an object's labels must meet, all of them (`In`, `NotIn`, `Exists`, `DoesNotExist`). */
  readonly matchExpressions?: readonly { key: string; operator: string; values?: readonly string[] }[];
}

/**
 * A label selector in any of the forms the API and opkit take: the string form (`app=web,tier!=db`), a `LabelSelector`,
 * or a `matchLabels` record.
 */
export type SelectorInput = string | LabelSelector | Readonly<Record<string, string>>;

/** Why a label selector cannot be used. */
export type SelectorErrorCode =
  /** The selector does not parse (a bad key, operator or value list). The message names the requirement at fault. */
  'InvalidSelector';

/** A label selector that does not parse (code `InvalidSelector`); the message names the requirement at fault. */
export class SelectorError extends OpkitError<SelectorErrorCode> {
  override readonly name = 'SelectorError';

  constructor(message: string, options?: { cause?: unknown }) {
    super('InvalidSelector', message, options);
  }
}

/**
 * A parsed label selector: requirements that must all hold. Matches labels locally, and prints the string form for
 * queries.
 */
export class Selector {
  /** The requirements, in the order given. */
  readonly requirements: readonly Requirement[];

  constructor(requirements: readonly Requirement[]) {
    this.requirements = requirements;
  }

  /** The selector of any `SelectorInput`; throws `SelectorError` for a malformed string or an unknown operator. */
  static from(input: SelectorInput): Selector {
    if (typeof input === 'string') return parseSelector(input);
    if (isLabelSelector(input)) {
      const reqs: Requirement[] = Object.entries(input.matchLabels ?? {}).map(([key, v]) => ({
        key,
        operator: 'In',
        values: [v],
      }));
      for (const e of input.matchExpressions ?? []) {
        if (!['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(e.operator)) {
          throw new SelectorError(`matchExpressions: unknown operator "${e.operator}" for key "${e.key}"`);
        }
        reqs.push({ key: e.key, operator: e.operator as Operator, values: e.values ?? [] });
      }
      return new Selector(reqs);
    }
    return new Selector(
      Object.entries(input as Record<string, string>).map(([key, v]) => ({ key, operator: 'In', values: [v] })),
    );
  }

  /**
   * Whether `labels` (none counts as empty) meet every requirement; a selector without requirements matches everything.
   */
  matches(labels: Readonly<Record<string, string>> | undefined): boolean {
    const l = labels ?? {};
    for (const r of this.requirements) {
      const has = Object.hasOwn(l, r.key);
      const v = l[r.key];
      switch (r.operator) {
        case 'In':
          if (!has || !r.values.includes(v as string)) return false;
          break;
        case 'NotIn':
          if (has && r.values.includes(v as string)) return false;
          break;
        case 'Exists':
          if (!has) return false;
          break;
        case 'DoesNotExist':
          if (has) return false;
          break;
      }
    }
    return true;
  }

  /** The string form, for `labelSelector=` query parameters. */
  toString(): string {
    return this.requirements
      .map((r) => {
        switch (r.operator) {
          case 'Exists':
            return r.key;
          case 'DoesNotExist':
            return `!${r.key}`;
          case 'In':
            return r.values.length === 1 ? `${r.key}=${r.values[0]}` : `${r.key} in (${r.values.join(',')})`;
          case 'NotIn':
            return r.values.length === 1 ? `${r.key}!=${r.values[0]}` : `${r.key} notin (${r.values.join(',')})`;
        }
        return '';
      })
      .join(',');
  }
}

function isLabelSelector(input: object): input is LabelSelector {
  const keys = Object.keys(input);
  return keys.length > 0 && keys.every((k) => k === 'matchLabels' || k === 'matchExpressions');
}

const KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * Parses the string form of a label selector (`a=b,c!=d,e in (x,y),f notin (z),g,!h`); the empty string selects
 * everything. Throws `SelectorError` naming the requirement at fault.
 */
export function parseSelector(text: string): Selector {
  const reqs: Requirement[] = [];
  // split on commas that are not inside parentheses
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth += 1;
    if (ch === ')') depth -= 1;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  if (current.trim().length > 0 || parts.length > 0) parts.push(current);
  for (const raw of parts) {
    const part = raw.trim();
    const fail = (why: string) => new SelectorError(`label selector "${text}": "${part}" ${why}`);
    if (part.length === 0) throw fail('is empty');
    let m = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(part);
    if (m) {
      const values = (m[3] as string)
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v.length > 0);
      if (values.length === 0) throw fail('needs at least one value');
      reqs.push({ key: checkKey(m[1] as string, fail), operator: m[2] === 'in' ? 'In' : 'NotIn', values });
      continue;
    }
    m = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(part);
    if (m) {
      reqs.push({
        key: checkKey(m[1] as string, fail),
        operator: m[2] === '!=' ? 'NotIn' : 'In',
        values: [m[3] as string],
      });
      continue;
    }
    m = /^(!?)(\S+)$/.exec(part);
    if (m) {
      reqs.push({ key: checkKey(m[2] as string, fail), operator: m[1] ? 'DoesNotExist' : 'Exists', values: [] });
      continue;
    }
    throw fail('is not a valid requirement (key, !key, key=value, key!=value, key in (…), key notin (…))');
  }
  return new Selector(reqs);
}

function checkKey(key: string, fail: (why: string) => SelectorError): string {
  if (!KEY.test(key)) throw fail(`has an invalid label key "${key}"`);
  return key;
}
