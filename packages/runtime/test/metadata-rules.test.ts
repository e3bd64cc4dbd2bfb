/**
 * A CEL rule about `metadata.name`, on a real apiserver: with `fieldPath: '.metadata.name'` the CRD is accepted (it
 * declares `metadata.name`, the only way the apiserver lets that path be named) and the refusal names the field;
 * without a fieldPath the refusal's field is the apiserver's `<nil>`, which `ApiError`'s message explains.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Environment } from '@opkit/testenv';
import { Type } from '@sinclair/typebox';
import { CustomResourceDefinitions } from '../src/client/builtins.ts';
import { ApiError } from '../src/client/errors.ts';
import type { Client } from '../src/client/index.ts';
import { defineKind } from '../src/crd/kind.ts';
import { startEnv, waitFor } from './support.ts';

/** A kind whose one rule on the whole object keeps names to 10 characters, naming `fieldPath` when given. */
const shortNamed = (kind: string, fieldPath?: string) =>
  defineKind({
    group: 'test.opkit.dev',
    version: 'v1',
    kind,
    plural: `${kind.toLowerCase()}s`,
    spec: Type.Object({ note: Type.Optional(Type.String({ maxLength: 10 })) }),
    objectValidations: [
      {
        rule: 'self.metadata.name.size() <= 10',
        message: 'metadata.name must be at most 10 characters',
        ...(fieldPath !== undefined ? { fieldPath } : {}),
      },
    ],
  });

const Named = shortNamed('Named', '.metadata.name');
const Unnamed = shortNamed('Unnamed');

describe('a CEL rule about metadata.name, on a real apiserver', () => {
  let env: Environment | undefined;
  let client: Client;
  before(async () => {
    ({ env, client } = await startEnv(0));
  });
  after(async () => {
    client?.close();
    await env?.stop();
  });

  /** The ApiError the create of a `kind` object named `name` fails with. */
  const refusal = async (kind: typeof Named | typeof Unnamed, name: string): Promise<ApiError> => {
    const err = await client.create(kind, { metadata: { name, namespace: 'default' }, spec: {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof ApiError) || err.code !== 'Invalid') assert.fail(`the create of ${name}: ${String(err)}`);
    return err;
  };

  test("fieldPath '.metadata.name' is accepted, and the refusal names metadata.name", async () => {
    await client.create(CustomResourceDefinitions, Named.crd());
    await waitFor('the CRD served', async () => (await client.list(Named, { namespace: 'default' })) !== undefined);
    await client.create(Named, { metadata: { name: 'short', namespace: 'default' }, spec: {} });
    const err = await refusal(Named, 'much-too-long');
    assert.deepEqual(err.causes, [
      {
        reason: 'FieldValueInvalid',
        message: 'Invalid value: metadata.name must be at most 10 characters',
        field: 'metadata.name',
      },
    ]);
  });

  test('without fieldPath, the field <nil> is explained in the message, the causes kept as sent', async () => {
    await client.create(CustomResourceDefinitions, Unnamed.crd());
    await waitFor('the CRD served', async () => (await client.list(Unnamed, { namespace: 'default' })) !== undefined);
    const err = await refusal(Unnamed, 'much-too-long');
    assert.equal(err.causes[0]?.field, '<nil>');
    assert.match(
      err.message,
      /: Unnamed\.test\.opkit\.dev "much-too-long" is invalid: \(the object as a whole: a rule without fieldPath\): Invalid value: metadata\.name must be at most 10 characters$/,
    );
    assert.doesNotMatch(err.message, /<nil>/);
  });
});
