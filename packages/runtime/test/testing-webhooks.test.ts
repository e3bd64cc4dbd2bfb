/**
 * `startTestManager({ webhooks })` on a real control plane: the test manager serves the admission webhooks and the
 * conversions, the apiserver calls them as soon as the start resolves (defaulting, refusal with field causes,
 * conversion both ways), and the configurations are gone after the stop — a second test manager in the same
 * environment is not affected, even after the manager failed. A cluster that cannot install webhooks gets a clear
 * TestingError.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Environment, start } from '@opkit/testenv';
import { Type } from '@sinclair/typebox';
import { ApiError } from '../src/client/errors.ts';
import { defineKind, permission } from '../src/index.ts';
import { startTestManager, TestingError } from '../src/testing/index.ts';
import { defaulter, fieldErrors, validator, type WebhookDefinition } from '../src/webhook/index.ts';

const Pets = defineKind({
  group: 'hooks.testing.opkit.dev',
  kind: 'Pet',
  plural: 'pets',
  scope: 'Namespaced',
  storage: 'v2',
  versions: {
    v1: { spec: Type.Object({ name: Type.String(), sound: Type.Optional(Type.String()) }) },
    v2: {
      spec: Type.Object({
        name: Type.Object({ given: Type.String() }),
        sound: Type.Optional(Type.String()),
      }),
    },
  },
  conversions: {
    v1: {
      toHub: ({ metadata, spec }) => ({ metadata, spec: { ...spec, name: { given: spec.name } } }),
      fromHub: ({ metadata, spec }) => ({ metadata, spec: { ...spec, name: spec.name.given } }),
    },
  },
});
const PetsV2 = Pets.versions.v2;

const webhooks: WebhookDefinition[] = [
  {
    type: 'mutating',
    resource: PetsV2,
    handler: defaulter(PetsV2, (pet) => {
      pet.spec.sound ??= 'meow';
    }),
  },
  {
    type: 'validating',
    resource: PetsV2,
    operations: ['CREATE', 'UPDATE'],
    handler: validator(PetsV2, {
      create: (pet) =>
        pet.spec.name.given === 'nobody'
          ? { errors: [fieldErrors.invalid('spec.name.given', pet.spec.name.given, 'a pet has a name')] }
          : undefined,
    }),
  },
];

const options = {
  name: 'pet-operator',
  permissions: [permission(Pets, ['list', 'watch'])],
  setup: () => {},
  webhooks: { admission: webhooks, conversion: [Pets] },
};

/** The names of every webhook configuration in the cluster. */
async function configurationNames(): Promise<string[]> {
  const names: string[] = [];
  for (const kind of ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations']) {
    const list = await env.api.request<{ items: { metadata: { name: string } }[] }>({
      path: `/apis/admissionregistration.k8s.io/v1/${kind}`,
    });
    names.push(...list.body.items.map((c) => c.metadata.name));
  }
  return names;
}

let env: Environment;
before(async () => {
  env = await start({ nodes: 0, log: () => {} });
});
after(async () => {
  await env?.stop();
});

test('the apiserver calls the test manager’s webhooks once it started: defaulted, refused with causes, converted', async () => {
  await using op = await startTestManager(env, options);
  const created = await op.client.create(PetsV2, {
    metadata: { name: 'tom', namespace: 'default' },
    spec: { name: { given: 'Tom' } },
  });
  assert.equal(created.spec.sound, 'meow', 'the mutating webhook defaulted the field');

  const refused = await op.client
    .create(PetsV2, { metadata: { name: 'ghost', namespace: 'default' }, spec: { name: { given: 'nobody' } } })
    .then(
      () => assert.fail('the validating webhook let it through'),
      (err: unknown) => err,
    );
  assert.ok(refused instanceof ApiError, String(refused));
  assert.equal(refused.code, 'Invalid');
  assert.deepEqual(
    refused.causes.map((c) => [c.field, c.reason]),
    [['spec.name.given', 'FieldValueInvalid']],
  );

  // through the conversion webhook: written as v1, stored as v2, read back in both
  await op.client.create(Pets.versions.v1, {
    metadata: { name: 'rex', namespace: 'default' },
    spec: { name: 'Rex', sound: 'woof' },
  });
  const asV2 = await op.client.get(PetsV2, { name: 'rex', namespace: 'default' });
  assert.deepEqual(asV2.spec, { name: { given: 'Rex' }, sound: 'woof' });
  const asV1 = await op.client.get(Pets.versions.v1, { name: 'tom', namespace: 'default' });
  assert.deepEqual(asV1.spec, { name: 'Tom', sound: 'meow' });
});

test('after stop the configurations are gone: a second test manager without webhooks is not refused', async () => {
  {
    await using _op = await startTestManager(env, options);
    assert.deepEqual((await configurationNames()).sort(), [
      'pet-operator-mutating-webhook-configuration',
      'pet-operator-test-conversion-probe',
      'pet-operator-validating-webhook-configuration',
    ]);
  }
  assert.deepEqual(await configurationNames(), [], 'stop removed the configurations');
  const crd = await env.api.request<{ spec: { conversion: { webhook?: { clientConfig?: object } } } }>({
    path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/pets.hooks.testing.opkit.dev',
  });
  assert.deepEqual(
    crd.body.spec.conversion.webhook?.clientConfig,
    { service: { namespace: 'default', name: 'pet-operator-webhook-service', path: '/convert', port: 443 } },
    'the conversion stanza is back as the CRD was installed (the Service opkit generate names)',
  );

  // a second test manager without webhooks: its writes are neither defaulted nor refused, nor blocked
  await using op = await startTestManager(env, { ...options, name: 'plain-operator', webhooks: {} });
  const pet = await op.client.create(PetsV2, {
    metadata: { name: 'nobody', namespace: 'default' },
    spec: { name: { given: 'nobody' } },
  });
  assert.equal(pet.spec.sound, undefined, 'no webhook defaulted it');
});

test('a manager that fails: stop() rejects with ManagerFailed, and the configurations are gone all the same', async () => {
  const { promise: fail, resolve: failNow } = Promise.withResolvers<void>();
  const op = await startTestManager(env, {
    ...options,
    name: 'failing-operator',
    setup: (mgr) => {
      mgr.add({
        needLeaderElection: false,
        start: async () => {
          await fail;
          throw new Error('boom');
        },
      });
    },
  });
  assert.ok((await configurationNames()).includes('failing-operator-mutating-webhook-configuration'));
  failNow();
  await assert.rejects(
    op.eventually('never', () => false),
    (err: unknown) => err instanceof TestingError && err.code === 'ManagerFailed',
  );
  await assert.rejects(op.stop(), (err: unknown) => err instanceof TestingError && err.code === 'ManagerFailed');
  assert.deepEqual(await configurationNames(), [], 'the failed test left no configuration behind');
});

test('a cluster without installWebhooks: a TestingError saying what to use', async () => {
  const cluster = { kubeconfigPath: env.kubeconfigPath, kubeconfigFor: env.kubeconfigFor.bind(env) };
  await assert.rejects(
    startTestManager(cluster, options),
    (err: unknown) => err instanceof TestingError && err.code === 'WebhooksUnsupported' && /testenv/.test(err.message),
  );
});

test('a cluster whose installWebhooks never calls serve: WebhooksNotServed, and what it registered is removed', async () => {
  let uninstalled = 0;
  const cluster = {
    kubeconfigPath: env.kubeconfigPath,
    kubeconfigFor: env.kubeconfigFor.bind(env),
    installWebhooks: async () => ({ uninstall: async () => void uninstalled++ }),
  };
  await assert.rejects(
    startTestManager(cluster, options),
    (err: unknown) => err instanceof TestingError && err.code === 'WebhooksNotServed' && /serve/.test(err.message),
  );
  assert.equal(uninstalled, 1);
});
