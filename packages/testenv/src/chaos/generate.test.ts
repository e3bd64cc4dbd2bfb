import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type AdmissionCheck,
  type GeneratedScenario,
  generatedScenarios,
  loadAdmissionCheck,
  MAX_CHECKS,
} from './generate.ts';
import { canonical, type Json, type Schema, type Site } from './generate-schema.ts';
import { candidates } from './generate-values.ts';
import type { Manifest } from './objects.ts';
import { parseTrialId, seeded } from './plan.ts';

const GROUP = 'gen.example.com';

/** A CRD of `kind` in `GROUP`, version v1, with `spec` as its spec's schema. */
function crd(kind: string, spec: Schema, rules: readonly Json[] = []): Json {
  const plural = `${kind.toLowerCase()}s`;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${GROUP}` },
    spec: {
      group: GROUP,
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: { ...spec, ...(rules.length > 0 ? { 'x-kubernetes-validations': rules } : {}) },
                status: { type: 'object', properties: { ready: { type: 'boolean' } } },
              },
            },
          },
          subresources: { status: {} },
        },
      ],
    },
  };
}

const sample = (kind: string, spec: Json, name = 'one'): Manifest => ({
  apiVersion: `${GROUP}/v1`,
  kind,
  metadata: { name, labels: { app: 'demo' } },
  spec,
});

/** Takes everything, as given. */
const allowAll: AdmissionCheck = (_crd, object) => ({ allowed: true, object: structuredClone(object) as Json });

const SERVER = crd('Server', {
  type: 'object',
  required: ['replicas'],
  properties: {
    replicas: { type: 'integer', minimum: 1, maximum: 5 },
    workers: { type: 'integer', minimum: 2 },
    mode: { type: 'string', enum: ['fast', 'safe', 'slow'] },
    debug: { type: 'boolean' },
    tag: { type: 'string', pattern: '^v[0-9]+$', maxLength: 4 },
    hosts: { type: 'array', maxItems: 2, items: { type: 'string', minLength: 1 } },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    tls: {
      type: 'object',
      required: ['secret'],
      properties: { secret: { type: 'string', minLength: 1 }, port: { type: 'integer', minimum: 1 } },
    },
  },
});
const SERVER_SAMPLE = sample('Server', { replicas: 2, workers: 3, mode: 'fast', tag: 'v1', hosts: ['a'] });

const ints = (spec: Json | undefined, key: string) => (typeof spec?.[key] === 'number' ? [spec[key] as number] : []);
const specs = (s: GeneratedScenario) => s.steps.flatMap((step) => (step.apply ? [step.apply.spec as Json] : []));

test('one scenario per kind: the sample applied, one spec property changed per step, then deleted', () => {
  const [s, ...more] = generatedScenarios({ crds: [SERVER], samples: [SERVER_SAMPLE], seed: 1, check: allowAll });
  assert.equal(more.length, 0);
  assert.ok(s);
  assert.equal(s.name, 'generated:Server');
  assert.equal(s.changes.length, 4, 'four changes by default');
  assert.equal(s.steps.length, 6);
  assert.deepEqual(s.steps[0]?.apply, SERVER_SAMPLE);
  assert.deepEqual(s.steps.at(-1)?.delete, { apiVersion: `${GROUP}/v1`, kind: 'Server', name: 'one' });
  const applied = s.steps.slice(0, -1).map((step) => step.apply as Manifest);
  for (const [i, o] of applied.entries()) {
    assert.deepEqual(o.metadata, SERVER_SAMPLE.metadata, 'metadata is the sample’s');
    assert.equal(o.status, undefined, 'status is never written');
    if (i === 0) continue;
    const before = applied[i - 1]?.spec as Json;
    const after = o.spec as Json;
    const changed = new Set([...Object.keys(before), ...Object.keys(after)]);
    const differ = [...changed].filter((k) => canonical(before[k]) !== canonical(after[k]));
    assert.equal(differ.length, 1, `step ${i + 1} changes one property of the spec: ${differ.join(', ')}`);
  }
});

test('the same seed gives the same scenarios; other seeds exercise other properties', () => {
  const make = (seed: number) =>
    generatedScenarios({ crds: [SERVER], samples: [SERVER_SAMPLE], seed, check: allowAll, changes: 3 });
  assert.deepEqual(make(7), make(7));
  const touched = new Set(
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].flatMap((seed) => make(seed).flatMap((s) => s.changes.map((c) => c.split(':')[0]))),
  );
  for (const p of ['spec.replicas', 'spec.workers', 'spec.mode', 'spec.debug', 'spec.tag', 'spec.hosts', 'spec.labels'])
    assert.ok(touched.has(p), `${p} is changed by some seed (changed: ${[...touched].join(', ')})`);
});

test('values stay within the schema: bounds kept small, enums, patterns, lengths, item counts', () => {
  for (let seed = 1; seed <= 30; seed++) {
    const [s] = generatedScenarios({
      crds: [SERVER],
      samples: [SERVER_SAMPLE],
      seed,
      check: allowAll,
      changes: 8,
    });
    for (const spec of specs(s as GeneratedScenario)) {
      for (const r of ints(spec, 'replicas')) assert.ok(r >= 1 && r <= 5, `replicas ${r}`);
      for (const w of ints(spec, 'workers')) assert.ok(w >= 2 && w <= 7, `workers ${w}: at most minimum + 5`);
      if (spec.mode !== undefined) assert.ok(['fast', 'safe', 'slow'].includes(spec.mode as string));
      if (spec.tag !== undefined) assert.match(spec.tag as string, /^v[0-9]{1,3}$/);
      if (spec.hosts !== undefined) assert.ok((spec.hosts as string[]).length <= 2, 'maxItems');
      if (spec.tls !== undefined)
        assert.ok(typeof (spec.tls as Json).secret === 'string', 'added with its required field');
    }
  }
});

test('a refused candidate is discarded, and a property never accepted is skipped', () => {
  const refused: string[] = [];
  // replicas may only grow, and the tag never changes (a transition rule, as the validator would judge it)
  const check: AdmissionCheck = (_crd, object, old) => {
    const spec = object.spec as Json;
    const before = old?.spec as Json | undefined;
    const ok =
      before === undefined ||
      ((spec.replicas as number) >= (before.replicas as number) && canonical(spec.tag) === canonical(before.tag));
    if (!ok) refused.push(canonical(spec));
    return { allowed: ok, object: structuredClone(object) as Json, ...(ok ? {} : { message: 'refused' }) };
  };
  for (let seed = 1; seed <= 10; seed++) {
    const [s] = generatedScenarios({ crds: [SERVER], samples: [SERVER_SAMPLE], seed, check, changes: 6 });
    const all = specs(s as GeneratedScenario);
    for (const [i, spec] of all.entries()) {
      assert.equal(spec.tag, 'v1', 'the tag never changes');
      if (i > 0) assert.ok((spec.replicas as number) >= (all[i - 1]?.replicas as number), 'replicas never shrink');
    }
  }
  assert.ok(refused.length > 0, 'some candidates were refused');
});

test('a change the apiserver would store unchanged (a default put back) is no change', () => {
  const withDefault = crd('Toggle', {
    type: 'object',
    properties: { on: { type: 'boolean', default: false } },
  });
  // defaulting as the apiserver does it: an absent `on` is stored as false
  const check: AdmissionCheck = (_crd, object) => {
    const spec = { on: false, ...(object.spec as Json) };
    return { allowed: true, object: { ...structuredClone(object), spec } as Json };
  };
  const [s] = generatedScenarios({
    crds: [withDefault],
    samples: [sample('Toggle', { on: true })],
    seed: 3,
    check,
    changes: 3,
  });
  const values = specs(s as GeneratedScenario).map((spec) => spec.on ?? false);
  for (let i = 1; i < values.length; i++)
    assert.notEqual(values[i], values[i - 1], `step ${i + 1} changes the stored value`);
});

test('a kind without a sample starts from its required fields, if the check accepts that object', () => {
  const logs: string[] = [];
  const out = generatedScenarios({ crds: [SERVER], samples: [], seed: 2, check: allowAll, log: (l) => logs.push(l) });
  const first = out[0]?.steps[0]?.apply;
  assert.equal(first?.metadata.name, 'server-generated');
  assert.deepEqual(Object.keys(first?.spec as Json), ['replicas']);
  const refuse: AdmissionCheck = (_crd, object) => ({ allowed: false, object: object as Json, message: 'no' });
  assert.deepEqual(
    generatedScenarios({ crds: [SERVER], samples: [], seed: 2, check: refuse, log: (l) => logs.push(l) }),
    [],
  );
  assert.match(logs.join('\n'), /generated:Server: no scenario: the first object is refused: no/);
});

test('a kind none of whose properties can change gets no scenario, and the checks per change are bounded', () => {
  let calls = 0;
  const frozen: AdmissionCheck = (_crd, object, old) => {
    calls++;
    return { allowed: old === undefined, object: structuredClone(object) as Json };
  };
  const logs: string[] = [];
  const out = generatedScenarios({
    crds: [SERVER],
    samples: [SERVER_SAMPLE],
    seed: 1,
    check: frozen,
    log: (l) => logs.push(l),
  });
  assert.deepEqual(out, []);
  assert.ok(calls <= 1 + MAX_CHECKS, `${calls} checks`);
  assert.match(logs.join('\n'), /no property of the spec can change validly/);
});

test('a generated scenario’s trial ids parse back to it', () => {
  assert.deepEqual(parseTrialId('generated:Server:3:crash@1'), {
    scenario: 'generated:Server',
    fault: { kind: 'crash', step: 2, k: 1 },
  });
});

test('candidates: boundaries, no current value, removal of an optional property', () => {
  const site = (schema: Schema, current: unknown, optional = false): Site => ({
    path: ['spec', 'x'],
    schema,
    current,
    optional,
  });
  const random = seeded(5);
  assert.deepEqual(
    [...(candidates(site({ type: 'integer', minimum: 0, maximum: 3 }, 1), random) as number[])].sort(),
    [0, 2, 3],
  );
  assert.deepEqual(candidates(site({ type: 'boolean' }, true), random), [false]);
  assert.deepEqual(candidates(site({ type: 'string', enum: ['a', 'b'] }, 'a'), random), ['b']);
  assert.ok(candidates(site({ type: 'string' }, '1.36'), random).includes('1.37'), 'a version is bumped');
  assert.deepEqual(candidates(site({ type: 'string', pattern: '(?<=a)b' }, 'b'), random).length, 0, 'lookbehind: skip');
  assert.ok(candidates(site({ type: 'integer' }, 4, true), random).includes(undefined), 'optional: removed');
  const cpu: Site = {
    path: ['spec', 'requests', 'cpu'],
    schema: { 'x-kubernetes-int-or-string': true, pattern: '^[0-9]+(m|Mi|Gi)?$' },
    current: undefined,
    optional: true,
  };
  assert.ok(
    candidates(cpu, random).every((v) => typeof v === 'number' || !String(v).endsWith('i')),
    'cpu, not bytes',
  );
});

test('with the real offline validator: every state admitted, the CEL rule’s violations discarded', async () => {
  const RULE = 'min may not exceed max';
  const range = crd(
    'Range',
    {
      type: 'object',
      required: ['min', 'max'],
      properties: {
        min: { type: 'integer', minimum: 0, maximum: 10 },
        max: { type: 'integer', minimum: 0, maximum: 10 },
        mode: { type: 'string', enum: ['Fast', 'Slow'] },
        label: { type: 'string', pattern: '^[a-z]+(-[0-9]+)?$', maxLength: 12 },
      },
    },
    [{ rule: 'self.min <= self.max', message: RULE }],
  );
  const check = await loadAdmissionCheck();
  const refused: string[] = [];
  const recording: AdmissionCheck = (c, object, old) => {
    const answer = check(c, object, old);
    if (!answer.allowed) refused.push(answer.message ?? '');
    return answer;
  };
  const start = sample('Range', { min: 3, max: 4, mode: 'Fast', label: 'web' });
  for (let seed = 1; seed <= 8; seed++) {
    const [s] = generatedScenarios({ crds: [range], samples: [start], seed, check: recording, changes: 8 });
    assert.ok(s, `seed ${seed}: a scenario`);
    let old: Json | undefined;
    for (const [i, o] of s.steps.flatMap((step) => (step.apply ? [step.apply] : [])).entries()) {
      const answer = check(range, o, old);
      assert.ok(answer.allowed, `seed ${seed}, step ${i + 1}: ${answer.message}`);
      const spec = o.spec as Json;
      assert.ok((spec.min as number) <= (spec.max as number), `seed ${seed}, step ${i + 1}: min <= max`);
      assert.ok(spec.mode === undefined || ['Fast', 'Slow'].includes(spec.mode as string));
      assert.ok(spec.label === undefined || /^[a-z]+(-[0-9]+)?$/.test(spec.label as string));
      old = answer.object;
    }
  }
  assert.ok(
    refused.some((m) => m.includes(RULE)),
    `candidates that break the CEL rule were refused and discarded: ${refused.join('; ')}`,
  );
});

test('a change never applies a map emptied of its entries: server-side apply would store null (the field is left out)', () => {
  const limits = crd('Limits', {
    type: 'object',
    properties: {
      resources: {
        type: 'object',
        properties: {
          requests: { type: 'object', additionalProperties: { type: 'string' } },
          keep: { type: 'object', properties: { a: { type: 'string' } } },
        },
      },
    },
  });
  const start = sample('Limits', { resources: { requests: { example: '1' }, keep: {} } });
  let removals = 0;
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]) {
    const [s] = generatedScenarios({ crds: [limits], samples: [start], seed, check: allowAll, changes: 4 });
    let before: Json = start as unknown as Json;
    for (const step of s?.steps ?? []) {
      if (!('apply' in step)) continue;
      const spec = (step.apply as unknown as Json).spec as Json | undefined;
      const resources = spec?.resources as Json | undefined;
      const requests = resources?.requests as Json | undefined;
      const was = ((before.spec as Json | undefined)?.resources as Json | undefined)?.requests as Json | undefined;
      assert.ok(
        !(requests && Object.keys(requests).length === 0 && was && Object.keys(was).length > 0),
        JSON.stringify(spec),
      );
      if (was && Object.keys(was).length > 0 && requests === undefined) removals++;
      before = step.apply as unknown as Json;
    }
  }
  assert.ok(removals > 0, 'some seed removes the last entry: the map is left out');
});
