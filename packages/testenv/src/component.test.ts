import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exitFailure } from './component.ts';

test('a component that could not bind its port failed as PortInUse, any other early exit as ComponentFailed', () => {
  const etcd = '{"level":"fatal","msg":"listen tcp 127.0.0.1:2379: bind: address already in use"}\nexit status 1';
  assert.equal(exitFailure(etcd), 'PortInUse');
  assert.equal(
    exitFailure('E1201 failed to listen on 127.0.0.1:6443: listen tcp: bind: address already in use'),
    'PortInUse',
  );
  assert.equal(exitFailure('Error: unknown flag: --bogus'), 'ComponentFailed');
  assert.equal(exitFailure(''), 'ComponentFailed');
});
