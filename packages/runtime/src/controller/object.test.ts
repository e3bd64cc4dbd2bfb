import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Jobs } from '../client/builtins.ts';
import { UsageError } from '../errors.ts';
import { childDeleteOptions } from './children.ts';

const job = { metadata: { name: 'pi', namespace: 'batch', uid: 'u-1' } };

test('ctx.delete: Background propagation unless told, the uid precondition always', () => {
  assert.deepEqual(childDeleteOptions(Jobs, job), { propagationPolicy: 'Background', preconditions: { uid: 'u-1' } });
  assert.deepEqual(
    childDeleteOptions(Jobs, job, {
      propagationPolicy: 'Orphan',
      gracePeriodSeconds: 0,
      preconditions: { resourceVersion: '42' },
    }),
    { propagationPolicy: 'Orphan', gracePeriodSeconds: 0, preconditions: { resourceVersion: '42', uid: 'u-1' } },
  );
  assert.deepEqual(childDeleteOptions(Jobs, job, { preconditions: { uid: 'u-1' } }).preconditions, { uid: 'u-1' });
  // an object named, not read: the uid the caller knows
  const named = { metadata: { name: 'pi', namespace: 'batch' } };
  assert.deepEqual(childDeleteOptions(Jobs, named, { preconditions: { uid: 'u-2' } }).preconditions, { uid: 'u-2' });
});

test('ctx.delete: another uid, or none at all, is a UsageError before any request', () => {
  const refused = (f: () => unknown, message: RegExp) =>
    assert.throws(
      f,
      (e: unknown) => e instanceof UsageError && e.code === 'InvalidArgument' && message.test(e.message),
    );
  refused(
    () => childDeleteOptions(Jobs, job, { preconditions: { uid: 'u-9' } }),
    /^ctx\.delete\(Job batch\/pi\) was given the uid precondition u-9, but the object's uid is u-1/,
  );
  refused(() => childDeleteOptions(Jobs, { metadata: { name: 'pi' } }), /needs the object's metadata\.uid/);
});
