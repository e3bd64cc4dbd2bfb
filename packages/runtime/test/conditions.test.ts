/**
 * `ConditionsSchema` on a real apiserver: a kind whose status uses it takes what `setCondition` writes, read back with
 * the same type, and the apiserver refuses what metav1.Condition's validation refuses — a reason that is not
 * CamelCase, an empty one, an unknown status, a negative observedGeneration, two conditions of one type — naming the
 * field.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Environment } from '@opkit/testenv';
import { Type } from '@sinclair/typebox';
import { CustomResourceDefinitions, Namespaces } from '../src/client/builtins.ts';
import { ApiError } from '../src/client/errors.ts';
import type { Client } from '../src/client/index.ts';
import { ConditionsSchema } from '../src/crd/index.ts';
import { defineKind, setCondition } from '../src/index.ts';
import { startEnv, waitServed } from './support.ts';

const Gauges = defineKind({
  group: 'conditions.opkit.dev',
  version: 'v1',
  kind: 'Gauge',
  plural: 'gauges',
  scope: 'Namespaced',
  spec: Type.Object({ level: Type.Optional(Type.Integer()) }),
  status: Type.Object({ conditions: Type.Optional(ConditionsSchema) }),
  subresources: { status: true },
});

describe('ConditionsSchema on a real apiserver', () => {
  let env: Environment;
  let client: Client;
  before(async () => {
    ({ env, client } = await startEnv());
    await client.create(CustomResourceDefinitions, Gauges.crd());
    await client.create(Namespaces, { metadata: { name: 'cond' } });
    await waitServed(client, Gauges, 'cond');
  });
  after(async () => {
    client?.close();
    await env?.stop();
  });

  test('setCondition’s conditions are stored as written; invalid ones are refused naming the field', async () => {
    const g = await client.create(Gauges, { metadata: { namespace: 'cond', name: 'g' }, spec: {} });
    const { conditions } = setCondition(g.status?.conditions, {
      type: 'example.com/Ready',
      status: 'True',
      reason: 'Measured',
      observedGeneration: g.metadata.generation ?? 0,
    });
    const written = await client.patchStatus(Gauges, { namespace: 'cond', name: 'g' }, { status: { conditions } });
    assert.deepEqual(written.status?.conditions, conditions);

    const ok = conditions[0];
    assert.ok(ok);
    const refused = async (what: string, bad: Record<string, unknown>[], field: RegExp) => {
      const err = await client
        .patchStatus(Gauges, { namespace: 'cond', name: 'g' }, { status: { conditions: bad } })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(err instanceof ApiError && err.code === 'Invalid', `${what}: refused as Invalid (got ${String(err)})`);
      assert.ok(
        err.causes.some((c) => field.test(c.field ?? '')),
        `${what}: the cause names ${field}: ${JSON.stringify(err.causes)}`,
      );
    };
    await refused('a reason with spaces', [{ ...ok, reason: 'not camel case' }], /status\.conditions\[0\]\.reason/);
    await refused('an empty reason', [{ ...ok, reason: '' }], /status\.conditions\[0\]\.reason/);
    await refused('an unknown status', [{ ...ok, status: 'Maybe' }], /status\.conditions\[0\]\.status/);
    await refused('a bad type', [{ ...ok, type: 'Not a type' }], /status\.conditions\[0\]\.type/);
    await refused('a negative generation', [{ ...ok, observedGeneration: -1 }], /observedGeneration/);
    await refused('a message too long', [{ ...ok, message: 'x'.repeat(32_769) }], /status\.conditions\[0\]\.message/);
    await refused(
      'no lastTransitionTime',
      [{ type: 'A', status: 'True', reason: 'R', message: '' }],
      /lastTransitionTime/,
    );
    await refused('two of one type', [ok, { ...ok, status: 'False' }], /status\.conditions\[1\]/);
  });
});
