import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { checkRoundTrip } from '../testing/roundtrip.ts';
import { defineKind } from './kind.ts';
import type { CrdSchemaError } from './schema.ts';

const Env = Type.Object({
  name: Type.String({ pattern: '^[A-Z_][A-Z0-9_]{0,8}$' }),
  value: Type.Optional(Type.String()),
});
const SpecV1alpha1 = Type.Object({
  replicas: Type.Integer({ minimum: 0, maximum: 100, format: 'int32' }),
  image: Type.String({ minLength: 1, maxLength: 40 }),
  env: Type.Optional(Type.Array(Env, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] })),
  maxUnavailable: Type.Optional(Type.Integer({ minimum: 1, format: 'int32' })),
});
const SpecV1 = Type.Object({
  replicas: Type.Integer({ minimum: 0, maximum: 100, format: 'int32' }),
  template: Type.Object({
    image: Type.String({ minLength: 1, maxLength: 40 }),
    env: Type.Optional(Type.Array(Env, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] })),
  }),
  rollout: Type.Optional(Type.Object({ maxUnavailable: Type.Integer({ minimum: 1, format: 'int32' }) })),
});
const Status = Type.Object({ replicas: Type.Optional(Type.Integer({ format: 'int32' })) });

const names = { group: 'apps.example.com', kind: 'Web', plural: 'webs' } as const;

const Web = defineKind({
  ...names,
  storage: 'v1',
  versions: {
    v1alpha1: {
      spec: SpecV1alpha1,
      status: Status,
      deprecationWarning: 'apps.example.com/v1alpha1 Web is deprecated; use v1',
    },
    v1: { spec: SpecV1, status: Status, subresources: { status: true } },
  },
  conversions: {
    v1alpha1: {
      toHub: ({ metadata, spec: { replicas, image, env, maxUnavailable }, status }) => ({
        metadata,
        spec: {
          replicas,
          template: { image, ...(env !== undefined ? { env } : {}) },
          ...(maxUnavailable !== undefined ? { rollout: { maxUnavailable } } : {}),
        },
        ...(status !== undefined ? { status } : {}),
      }),
      fromHub: ({ metadata, spec: { replicas, template, rollout }, status }) => ({
        metadata,
        spec: {
          replicas,
          image: template.image,
          ...(template.env !== undefined ? { env: template.env } : {}),
          ...(rollout?.maxUnavailable !== undefined ? { maxUnavailable: rollout.maxUnavailable } : {}),
        },
        ...(status !== undefined ? { status } : {}),
      }),
    },
  },
});

test('the storage version is the hub and the resource; every version has a Kind', () => {
  assert.equal(Web.storageVersion, 'v1');
  assert.equal(Web.apiVersion, 'apps.example.com/v1');
  assert.equal(Web.versions.v1alpha1.apiVersion, 'apps.example.com/v1alpha1');
  assert.equal(Web.versions.v1.plural, 'webs');
});

test('the CRD carries every version, one storage version and the webhook conversion stanza', () => {
  const crd = Web.crd({ conversion: { service: { namespace: 'sys', name: 'web-webhook' }, caBundle: 'Q0E=' } });
  const versions = crd.spec.versions.map((v) => [v.name, v.served, v.storage]);
  assert.deepEqual(versions, [
    ['v1alpha1', true, false],
    ['v1', true, true],
  ]);
  const alpha = crd.spec.versions[0];
  assert.equal(alpha?.deprecated, true);
  assert.equal(alpha?.deprecationWarning, 'apps.example.com/v1alpha1 Web is deprecated; use v1');
  assert.equal(alpha?.subresources, undefined, 'subresources are per version');
  assert.deepEqual(crd.spec.versions[1]?.subresources, { status: {} });
  const schemaProps = (v: number) => {
    const spec = crd.spec.versions[v]?.schema?.openAPIV3Schema?.properties?.spec as { properties?: object } | undefined;
    return Object.keys(spec?.properties ?? {});
  };
  assert.deepEqual(schemaProps(0), ['replicas', 'image', 'env', 'maxUnavailable']);
  assert.deepEqual(schemaProps(1), ['replicas', 'template', 'rollout']);
  assert.deepEqual(crd.spec.conversion, {
    strategy: 'Webhook',
    webhook: {
      conversionReviewVersions: ['v1'],
      clientConfig: {
        service: { namespace: 'sys', name: 'web-webhook', path: '/convert', port: 443 },
        caBundle: 'Q0E=',
      },
    },
  });
  assert.deepEqual(
    Web.crd({ conversion: { url: 'https://127.0.0.1:9443/convert' } }).spec.conversion?.webhook?.clientConfig,
    {
      url: 'https://127.0.0.1:9443/convert',
    },
  );
});

test('crd() of a kind with several versions without a conversion client config fails naming what to pass', () => {
  assert.throws(
    () => Web.crd(),
    (err: CrdSchemaError) => {
      assert.equal(err.path, 'conversion');
      assert.match(
        err.message,
        /webs\.apps\.example\.com has several versions: pass the conversion webhook's client config/,
      );
      return true;
    },
  );
});

test('convert goes spoke → hub → spoke, keeps metadata, sets apiVersion and kind', () => {
  const old = {
    apiVersion: 'apps.example.com/v1alpha1',
    kind: 'Web',
    metadata: { name: 'a', namespace: 'ns', uid: 'u1', resourceVersion: '5' },
    spec: { replicas: 2, image: 'nginx', maxUnavailable: 1 },
  };
  const v1 = Web.convert(old, 'apps.example.com/v1');
  assert.deepEqual(v1, {
    apiVersion: 'apps.example.com/v1',
    kind: 'Web',
    metadata: { name: 'a', namespace: 'ns', uid: 'u1', resourceVersion: '5' },
    spec: { replicas: 2, template: { image: 'nginx' }, rollout: { maxUnavailable: 1 } },
  });
  assert.deepEqual(Web.convert(v1, 'apps.example.com/v1alpha1'), old);
  assert.notEqual(Web.convert(old, 'apps.example.com/v1alpha1'), old, 'same version: a copy');
  assert.throws(() => Web.convert(old, 'apps.example.com/v2'), { code: 'UnknownVersion' });
  assert.throws(() => Web.convert({ ...old, kind: 'Other' }, 'apps.example.com/v1'), { code: 'WrongKind' });
  assert.throws(() => Web.convert(old, 'other.example.com/v1'), { code: 'WrongKind' });
});

test('a conversion that throws becomes a ConversionFailed naming the object', () => {
  const Bad = defineKind({
    ...names,
    storage: 'v1',
    versions: { v1alpha1: { spec: SpecV1alpha1 }, v1: { spec: SpecV1 } },
    conversions: {
      v1alpha1: {
        toHub: () => {
          throw new Error('boom');
        },
        fromHub: () => {
          throw new Error('boom');
        },
      },
    },
  });
  const obj = { apiVersion: 'apps.example.com/v1alpha1', kind: 'Web', metadata: { name: 'x' }, spec: {} };
  assert.throws(
    () => Bad.convert(obj, 'apps.example.com/v1'),
    (err: Error & { code: string }) => err.code === 'ConversionFailed' && /Web x to v1: boom/.test(err.message),
  );
});

test('definitions are checked: storage listed, conversions complete', () => {
  const versions = { v1alpha1: { spec: SpecV1alpha1 }, v1: { spec: SpecV1 } };
  assert.throws(
    // @ts-expect-error: v2 is not a version
    () => defineKind({ ...names, storage: 'v2', versions, conversions: {} }),
    (err: CrdSchemaError) => err.path === 'storage',
  );
  assert.throws(
    // @ts-expect-error: the v1alpha1 conversion is missing
    () => defineKind({ ...names, storage: 'v1', versions, conversions: {} }),
    (err: CrdSchemaError) => err.path === 'conversions.v1alpha1',
  );
  assert.throws(
    () => defineKind({ ...names, group: 'nodot', storage: 'v1', versions: { v1: { spec: SpecV1 } }, conversions: {} }),
    (err: CrdSchemaError) => err.path === 'group',
  );
});

test('fuzzed round trips: v1alpha1 → v1 → v1alpha1 and v1 → v1alpha1 → v1 are equal (500 objects each)', () => {
  checkRoundTrip(Web, { numRuns: 500 });
});

test('a lossy conversion is caught by the fuzzer', () => {
  const Lossy = defineKind({
    ...names,
    storage: 'v1',
    versions: { v1alpha1: { spec: SpecV1alpha1 }, v1: { spec: SpecV1 } },
    conversions: {
      v1alpha1: {
        toHub: ({ metadata, spec }) => ({
          metadata,
          spec: { replicas: spec.replicas, template: { image: spec.image } },
        }),
        fromHub: ({ metadata, spec }) => ({ metadata, spec: { replicas: spec.replicas, image: spec.template.image } }),
      },
    },
  });
  assert.throws(() => checkRoundTrip(Lossy, { numRuns: 200, seed: 1 }), /changed the object/);
});
