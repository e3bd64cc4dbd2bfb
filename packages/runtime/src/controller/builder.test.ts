/**
 * The builder's call order is a type error (each `@ts-expect-error` below fails the type check if the misuse ever
 * type-checks again), and each call leaves the builder it was called on as it was.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Cache } from '../cache/cache.ts';
import { ConfigMaps, type Pod, Pods } from '../client/builtins.ts';
import { offlineClient } from '../client/offline.fixture.ts';
import { UsageError } from '../errors.ts';
import { ControllerBuilder, type ControllerBuilderFor, mergedOptions } from './builder.ts';
import type { Controller } from './controller.ts';
import { retryWithBackoff } from './policy.ts';
import { done } from './reconcile.ts';

function builder(register?: (c: Controller) => void): ControllerBuilder {
  const client = offlineClient();
  return new ControllerBuilder({ client, cache: new Cache({ client }), ...(register ? { register } : {}) });
}

/** Never called: only type-checked. */
export function misuse(b: ControllerBuilder, pods: ControllerBuilderFor<Pod>): void {
  // @ts-expect-error owns() needs the primary kind: call for(kind) first
  b.owns(Pods);
  // @ts-expect-error reconcile() needs the primary kind
  b.reconcile(async () => done());
  // @ts-expect-error complete() needs the primary kind
  b.complete(async () => done());
  // @ts-expect-error a controller has one primary kind: for() once
  pods.for(ConfigMaps);
  // @ts-expect-error complete() would ignore onError(): reconcile() it is
  pods.onError(() => retryWithBackoff()).complete(async () => done());
  // @ts-expect-error … and finalize(), however far down the chain
  pods
    .finalize('x.example.com/f', async () => done())
    .owns(ConfigMaps)
    .complete(async () => done());
  // these type-check
  pods
    .owns(ConfigMaps)
    .onError(() => retryWithBackoff())
    .owns(ConfigMaps)
    .reconcile(async (pod) => {
      pod.spec?.containers.map((c) => c.name);
      return done();
    });
  b.named('x')
    .watches(ConfigMaps, () => [])
    .for(Pods)
    .complete(async () => done());
}

test('each call returns a new builder: a partial chain can be reused', () => {
  const built: Controller[] = [];
  const base = builder((c) => built.push(c)).for(ConfigMaps);
  const a = base.named('a').owns(Pods);
  const b = base.named('b');
  a.complete(async () => done());
  b.reconcile(async () => done());
  base.complete(async () => done());
  assert.deepEqual(
    built.map((c) => c.name),
    ['a', 'b', 'configmap'],
  );
});

test('complete() after onError() from a caller the types do not reach is a UsageError', () => {
  const withPolicy = builder()
    .for(ConfigMaps)
    .onError(() => retryWithBackoff());
  const untyped: { complete(fn: () => Promise<undefined>): unknown } = withPolicy as unknown as {
    complete(fn: () => Promise<undefined>): unknown;
  };
  assert.throws(
    () => untyped.complete(async () => undefined),
    (err: unknown) => err instanceof UsageError && err.code === 'InvalidArgument',
  );
});

test("a controller on every replica takes the deps' everyReplica defaults (the manager's unfenced Event recorder)", () => {
  const fence = () => {};
  const deps = {
    defaults: { fence, fieldManager: 'm', maxConcurrentReconciles: 2 },
    everyReplica: { fieldManager: 'e' },
  };
  assert.deepEqual(mergedOptions(deps, { maxConcurrentReconciles: 3 }), {
    fence,
    fieldManager: 'm',
    maxConcurrentReconciles: 3,
  });
  assert.deepEqual(mergedOptions(deps, { needLeaderElection: false }), {
    fence,
    fieldManager: 'e',
    maxConcurrentReconciles: 2,
    needLeaderElection: false,
  });
  assert.deepEqual(mergedOptions(deps, { needLeaderElection: false, fieldManager: 'own' }).fieldManager, 'own');
  assert.deepEqual(
    mergedOptions({ defaults: { needLeaderElection: false }, everyReplica: { fieldManager: 'e' } }, {}),
    {
      needLeaderElection: false,
      fieldManager: 'e',
    },
  );
});
