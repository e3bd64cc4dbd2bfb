import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UsageError } from '../errors.ts';
import { type AdmissionHandler, defaulter, validator } from './admission.ts';
import { type WebhookDefinition, webhookConfigurations } from './manifests.ts';
import { Widgets } from './widgets.fixture.ts';

const endpoint = { url: 'https://127.0.0.1:9443' };

/** The operations of the one webhook `definition` configures. */
function operationsOf(definition: WebhookDefinition): unknown {
  const [configuration] = webhookConfigurations('w', endpoint, [definition]) as unknown as {
    webhooks: { rules: { operations: string[] }[] }[];
  }[];
  return configuration?.webhooks[0]?.rules[0]?.operations;
}

const none = () => undefined;

test('a validating webhook covers the operations its validator has handlers for: DELETE only with a delete handler', () => {
  // the scaffold's validator: create and update, so deletes never call the webhook (and an operator that is down
  // cannot block them under failurePolicy: Fail)
  const scaffolded = validator(Widgets, { create: none, update: none });
  assert.deepEqual(operationsOf({ type: 'validating', resource: Widgets, handler: scaffolded }), ['CREATE', 'UPDATE']);
  const all = validator(Widgets, { create: none, update: none, delete: none });
  assert.deepEqual(operationsOf({ type: 'validating', resource: Widgets, handler: all }), [
    'CREATE',
    'UPDATE',
    'DELETE',
  ]);
  const deleteOnly = validator(Widgets, { delete: none });
  assert.deepEqual(operationsOf({ type: 'validating', resource: Widgets, handler: deleteOnly }), ['DELETE']);
  const updateOnly = validator(Widgets, { update: none });
  assert.deepEqual(operationsOf({ type: 'validating', resource: Widgets, handler: updateOnly }), ['UPDATE']);
});

test('a defaulter covers CREATE and UPDATE; a handler of your own covers CREATE and UPDATE unless operations says more', () => {
  const fill = defaulter(Widgets, (w) => {
    w.spec.size ??= 1;
  });
  assert.deepEqual(operationsOf({ type: 'mutating', resource: Widgets, handler: fill }), ['CREATE', 'UPDATE']);
  const own: AdmissionHandler = async (request) => ({ uid: request.uid, allowed: true });
  assert.deepEqual(operationsOf({ type: 'validating', resource: Widgets, handler: own }), ['CREATE', 'UPDATE']);
  assert.deepEqual(operationsOf({ type: 'mutating', resource: Widgets, handler: own }), ['CREATE', 'UPDATE']);
  assert.deepEqual(
    operationsOf({ type: 'validating', resource: Widgets, handler: own, operations: ['DELETE', 'CONNECT'] }),
    ['DELETE', 'CONNECT'],
  );
});

test('explicit operations win, also one the handler does not answer (it is then allowed unchecked)', () => {
  const createOnly = validator(Widgets, { create: none });
  assert.deepEqual(
    operationsOf({ type: 'validating', resource: Widgets, handler: createOnly, operations: ['CREATE', 'UPDATE'] }),
    ['CREATE', 'UPDATE'],
  );
  const all = validator(Widgets, { create: none, update: none, delete: none });
  assert.deepEqual(operationsOf({ type: 'validating', resource: Widgets, handler: all, operations: ['CREATE'] }), [
    'CREATE',
  ]);
});

test('a webhook that would be called for nothing is refused with a UsageError naming it and what to do', () => {
  const empty = validator(Widgets, {});
  const refused = (definition: WebhookDefinition, message: RegExp) =>
    assert.throws(
      () => webhookConfigurations('w', endpoint, [definition]),
      (err: unknown) => err instanceof UsageError && err.code === 'InvalidArgument' && message.test(err.message),
    );
  refused(
    { type: 'validating', resource: Widgets, handler: empty },
    /^webhook vwidget-v1\.x\.example\.com: its validator has no create, update or delete handler/,
  );
  refused(
    { type: 'validating', resource: Widgets, handler: validator(Widgets, { create: none }), operations: [] },
    /^webhook vwidget-v1\.x\.example\.com: operations is empty/,
  );
});
