/**
 * Quantities on a real control plane: a CRD field declared with `QuantitySchema()` is validated by the apiserver
 * (`"lots"` refused naming the field; `"1Gi"`, `500`, `"1.5e3"` accepted), and, differentially, the apiserver's own
 * canonical form of generated quantities (a ResourceQuota's `spec.hard`: the apiserver rounds a resource list's
 * quantities up to milli-units when it decodes them, then stores apimachinery's `Quantity.String()`) is exactly
 * `Quantity.parse(x).roundUp(-3).toString()`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Environment } from '@opkit/testenv';
import { Type } from '@sinclair/typebox';
import fc from 'fast-check';
import { CustomResourceDefinitions } from '../src/client/builtins.ts';
import { type Client, resource } from '../src/client/index.ts';
import { ApiError, defineKind, type KubeObject } from '../src/index.ts';
import { Quantity, QuantitySchema } from '../src/quantity/index.ts';
import { eventually } from '../src/testing/index.ts';
import { startEnv } from './support.ts';

const Volumes = defineKind({
  group: 'quantity.opkit.dev',
  version: 'v1',
  kind: 'Volume',
  plural: 'volumes',
  spec: Type.Object({ storage: QuantitySchema({ description: 'The size of the volume.' }) }),
});

interface ResourceQuota extends KubeObject {
  spec?: { hard?: Record<string, string | number> };
}
const ResourceQuotas = resource<ResourceQuota>({
  group: '',
  version: 'v1',
  kind: 'ResourceQuota',
  plural: 'resourcequotas',
  namespaced: true,
});

let env: Environment;
let client: Client;
before(async () => {
  ({ env, client } = await startEnv(0));
  await client.create(CustomResourceDefinitions, Volumes.crd());
  await eventually('the Volume CRD to be served', async () => {
    await client.list(Volumes, { pageSize: 1 });
    return true;
  });
});
after(async () => {
  await env?.stop();
});

test('a QuantitySchema field: the apiserver refuses "lots" naming the field, accepts "1Gi", 500 and "1.5e3"', async () => {
  const err = await client
    .create(Volumes, { metadata: { name: 'lots', namespace: 'default' }, spec: { storage: 'lots' } })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  assert.ok(err instanceof ApiError, `expected an ApiError, got ${String(err)}`);
  assert.equal(err.status, 422);
  assert.ok(
    err.causes.some((c) => c.field === 'spec.storage'),
    `the refusal names spec.storage: ${JSON.stringify(err.causes)}`,
  );
  for (const [name, storage] of [
    ['gi', '1Gi'],
    ['integer', 500],
    ['exponent', '1.5e3'],
  ] as const) {
    const created = await client.create(Volumes, { metadata: { name, namespace: 'default' }, spec: { storage } });
    assert.equal(created.spec.storage, storage, 'a custom resource keeps the value as written');
    assert.ok(Quantity.parse(created.spec.storage).cmp('1') > 0);
  }
});

/** Non-negative quantity texts of every shape (a quota refuses negative ones). */
const texts = fc
  .record({
    sign: fc.constantFrom('', '+'),
    integer: fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: 20 }),
    fraction: fc.option(fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: 11 }), { nil: undefined }),
    suffix: fc.oneof(
      fc.constantFrom('', 'n', 'u', 'm', 'k', 'M', 'G', 'T', 'P', 'E', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'),
      fc
        .tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.integer({ min: 0, max: 30 }))
        .map(([e, sign, n]) => `${e}${sign}${n}`),
    ),
  })
  .filter((t) => /[0-9]/.test(t.integer + (t.fraction ?? '')))
  .map((t) => `${t.sign}${t.integer}${t.fraction === undefined ? '' : `.${t.fraction}`}${t.suffix}`);

/** Texts where apimachinery's canonical form has a quirk worth pinning. */
const QUIRKS = [
  '1000Mi',
  '1024Mi',
  '0.5Gi',
  '1.5',
  '1.500',
  '+1Ki',
  '01',
  '1E3',
  '1.25e5',
  '1000E',
  '16Ei',
  '9Ei',
  '1e+21',
  '.001Ki',
  '0.000000000001Ki',
  '100.035Ki',
  '3.001n',
  '1.',
  '1.G',
  '999999999999999999.1',
  '9223372036854775808',
  '10E',
];

test('differential: the apiserver stores a ResourceQuota’s quantities as Quantity.parse(x).roundUp(-3).toString()', async () => {
  const generated = fc.sample(texts, { numRuns: 1000, seed: 28 });
  const all = [...QUIRKS, ...generated];
  const hard: Record<string, string> = {};
  all.forEach((text, i) => {
    hard[`requests.quantity.opkit.dev/q${i}`] = text;
  });
  await client.create(ResourceQuotas, { metadata: { name: 'differential', namespace: 'default' }, spec: { hard } });
  const stored = await client.get(ResourceQuotas, { namespace: 'default', name: 'differential' });
  const mismatches: string[] = [];
  all.forEach((text, i) => {
    const apiserver = stored.spec?.hard?.[`requests.quantity.opkit.dev/q${i}`];
    const ours = Quantity.parse(text).roundUp(-3).toString();
    if (apiserver !== ours) mismatches.push(`${text}: apiserver ${apiserver}, Quantity ${ours}`);
  });
  assert.deepEqual(mismatches, []);
});

test('differential: a JSON number is read as its JSON text, by the apiserver as by Quantity.parse', async () => {
  const numbers = [500, 1.5, 1e21, 0.1, 1e-7, 123456789.123, 2 ** 53];
  const hard: Record<string, number> = {};
  numbers.forEach((n, i) => {
    hard[`requests.quantity.opkit.dev/n${i}`] = n;
  });
  await client.create(ResourceQuotas, { metadata: { name: 'numbers', namespace: 'default' }, spec: { hard } });
  const stored = await client.get(ResourceQuotas, { namespace: 'default', name: 'numbers' });
  const mismatches = numbers.flatMap((n, i) => {
    const apiserver = stored.spec?.hard?.[`requests.quantity.opkit.dev/n${i}`];
    const ours = Quantity.parse(n).roundUp(-3).toString();
    return apiserver === ours ? [] : [`${n}: apiserver ${apiserver}, Quantity ${ours}`];
  });
  assert.deepEqual(mismatches, []);
});
