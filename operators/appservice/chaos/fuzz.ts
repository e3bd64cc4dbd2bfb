/**
 * @module chaos/fuzz
 * Hostile AppService bodies, generated from a seed: wrong types, values at and past every bound of the schema, huge
 * strings and lists (kept under the apiserver's 3 MiB request limit, so the schema is what refuses them), unicode and
 * control characters, unknown fields and deep nesting. Each body is created as-is; it must be either refused with a
 * message that names the field, or accepted and then reconciled by the operator (its status reports the generation).
 */
import { ApiError } from '@opkit/runtime';
import type { Client } from '@opkit/runtime/client';
import { type AppService, AppServices } from '../src/api/v1alpha1/appservice.ts';
import type { Rng } from './rng.ts';

export interface FuzzCase {
  readonly what: string;
  /** The field a refusal must name (the apiserver's path, e.g. `spec.replicas`). */
  readonly field: string;
  readonly spec: Record<string, unknown>;
  readonly metadata?: Record<string, unknown>;
}

export interface FuzzOutcome {
  readonly what: string;
  /** `error`: the request failed without an answer from the schema (5xx, network): the harness's or the server's. */
  readonly result: 'refused' | 'reconciled' | 'refused-unnamed' | 'not-reconciled' | 'error';
  readonly message?: string;
}

const NESTED = (depth: number): unknown => (depth === 0 ? 'x' : { n: NESTED(depth - 1) });
const str = (n: number, c = 'a') => c.repeat(n);

/** The case generators: each takes the RNG and returns one hostile (or boundary) body. */
const GENERATORS: readonly ((rng: Rng) => FuzzCase)[] = [
  (r) => {
    const v = r.pick<unknown>(['3', 3.5, true, null, [], {}, '', 'NaN', -1, 10_001, 2 ** 31, 1e30, -(2 ** 40)]);
    return { what: `replicas ${JSON.stringify(v)}`, field: 'spec.replicas', spec: { replicas: v } };
  },
  (r) => {
    const v = r.pick<unknown>([5, true, [], {}, '', str(513), str(r.int(514, 1_000_000), 'é')]);
    return {
      what: `image of type ${typeof v} (${JSON.stringify(v).length} bytes)`,
      field: 'spec.image',
      spec: { image: v },
    };
  },
  (r) => {
    const v = r.pick<unknown>(['sh -c true', [1, 2], [null], Array.from({ length: 65 }, () => 'x'), [str(4097)]]);
    return { what: 'command malformed or past its bounds', field: 'spec.command', spec: { command: v } };
  },
  (r) => {
    const n = r.pick([257, 10_000, 100_000]);
    return {
      what: `args with ${n} items`,
      field: 'spec.args',
      spec: { args: Array.from({ length: n }, (_, i) => `a${i}`) },
    };
  },
  (r) => {
    const v = r.pick<unknown>([
      {},
      'A=1',
      [{ value: 'x' }],
      [{ name: 5, value: 'x' }],
      [{ name: '', value: 'x' }],
      [{ name: str(257), value: 'x' }],
      [{ name: 'A', value: str(32_769) }],
      [{ name: 'A', value: { deep: NESTED(r.int(5, 60)) } }],
      [
        { name: 'DUP', value: '1' },
        { name: 'DUP', value: '2' },
      ],
      Array.from({ length: 257 }, (_, i) => ({ name: `E${i}`, value: 'v' })),
    ]);
    return { what: 'env malformed or past its bounds', field: 'spec.env', spec: { env: v } };
  },
  (r) => {
    const v = r.pick<unknown>([
      'big',
      { limits: { cpu: 'lots' } },
      { limits: { memory: -1 } },
      { requests: { cpu: '2' }, limits: { cpu: '1' } },
      { limits: { cpu: NESTED(r.int(3, 40)) } },
    ]);
    return { what: 'resources malformed', field: 'spec.resources', spec: { resources: v } };
  },
  (r) => {
    const v = r.pick<unknown>([
      [{ containerPort: 0 }],
      [{ containerPort: 65_536 }],
      [{ containerPort: '80' }],
      [{ containerPort: 80, name: 'Not_Valid' }],
      [{ containerPort: 80, name: str(16) }],
    ]);
    return { what: 'ports malformed', field: 'spec.ports', spec: { ports: v } };
  },
  (r) => {
    const v = r.pick<unknown>([0, -3, 'one', 1.5]);
    return { what: `maxUnavailable ${JSON.stringify(v)}`, field: 'spec.maxUnavailable', spec: { maxUnavailable: v } };
  },
  (r) => {
    const f = r.pick(['foo', 'replica', 'Image', '__proto__x', 'ünïcode']);
    return { what: `unknown field spec.${f}`, field: `spec.${f}`, spec: { [f]: NESTED(r.int(0, 30)) } };
  },
  (r) => {
    const v = r.pick(['busybox:ü', 'busybox\u0000', '😀', '\u202eevil', 'busybox\n', 'a'.repeat(512), 'busybox:1.36']);
    // valid strings are accepted (an image reference is the runtime's to judge), invalid ones refused
    return { what: `image ${JSON.stringify(v).slice(0, 40)}`, field: 'spec.image', spec: { image: v } };
  },
  (r) => {
    const env = Array.from({ length: r.int(1, 64) }, (_, i) => ({
      name: `V${i}`,
      value: r.pick(['ü', '😀'.repeat(r.int(1, 2000)), '\u0000', '\t', 'x'.repeat(r.int(0, 32_768))]),
    }));
    return { what: `env of ${env.length} unicode values`, field: 'spec.env', spec: { env } };
  },
  (r) => {
    const name = r.pick(['UPPER', 'ünï', 'a'.repeat(254), '-lead', `dot.ted.name-${r.int(0, 1e9)}`, 'under_score']);
    return { what: `metadata.name ${name.slice(0, 20)}`, field: 'metadata.name', spec: {}, metadata: { name } };
  },
];

/** `count` cases from the seed; every generator is used in turn, with random choices inside. */
export function fuzzCases(rng: Rng, count: number): FuzzCase[] {
  return Array.from({ length: count }, (_, i) => (GENERATORS[i % GENERATORS.length] as (r: Rng) => FuzzCase)(rng));
}

/**
 * Creates each case in `namespace` (8 at a time); an accepted one must be reconciled within 30 s (status for its
 * generation), then it is deleted.
 */
export async function runFuzz(admin: Client, namespace: string, cases: readonly FuzzCase[]): Promise<FuzzOutcome[]> {
  const out: FuzzOutcome[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < cases.length) {
        const i = next++;
        const c = cases[i] as FuzzCase;
        const name = typeof c.metadata?.name === 'string' ? c.metadata.name : `fuzz-${i}`;
        const body = {
          metadata: { ...c.metadata, name, namespace },
          spec: { replicas: 0, image: 'busybox:1.36', ...c.spec },
        } as unknown as AppService;
        let created: AppService;
        try {
          created = await admin.create(AppServices, body);
        } catch (err) {
          const message = (err as Error).message;
          if (!(err instanceof ApiError) || err.status === 0 || err.status >= 500) {
            out.push({ what: c.what, result: 'error', message });
            continue;
          }
          out.push({ what: c.what, result: message.includes(c.field) ? 'refused' : 'refused-unnamed', message });
          continue;
        }
        const ok = await reconciled(admin, namespace, name, created.metadata.generation ?? 1);
        out.push({ what: c.what, result: ok ? 'reconciled' : 'not-reconciled' });
        await admin.delete(AppServices, { namespace, name }).catch(() => {});
      }
    }),
  );
  return out;
}

async function reconciled(admin: Client, namespace: string, name: string, generation: number): Promise<boolean> {
  const t0 = performance.now();
  while (performance.now() - t0 < 30_000) {
    const app = await admin.get(AppServices, { namespace, name }).catch(() => undefined);
    if ((app?.status?.observedGeneration ?? 0) >= generation) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}
