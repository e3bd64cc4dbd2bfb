/**
 * The controller's queue decisions with a fake clock and no apiserver (no kind is watched, requests are queued by
 * hand): at which priority retries and requeues come back. Reconciles against a real apiserver are tested in
 * test/controller.test.ts.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Cache } from '../cache/cache.ts';
import { offlineClient } from '../client/offline.fixture.ts';
import { objectKey } from '../client/resource.ts';
import { UsageError } from '../errors.ts';
import { FakeClock, LOW_PRIORITY } from '../workqueue/index.ts';
import { Controller } from './controller.ts';
import { type ReconcileRequest, type Result, requeueAfter } from './reconcile.ts';

/** Lets the workers run until they wait again (no fake time passes). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

const key = (name: string) => objectKey({ namespace: 'ns', name });

/**
 * A one-worker controller whose reconcile records each request's name, answers with `answer(name, nth)` (or throws
 * it), and waits on `hold` for the request named `hold`.
 */
function harness(answer: (name: string, nth: number) => Result | Error | undefined) {
  const clock = new FakeClock(1_000_000);
  const client = offlineClient();
  const order: string[] = [];
  let release: () => void = () => {};
  const controller = new Controller(
    { name: 'priorities', client, cache: new Cache({ client }), clock },
    {
      async reconcile(req: ReconcileRequest) {
        order.push(req.name);
        if (req.name === 'hold') await new Promise<void>((resolve) => (release = resolve));
        const result = answer(req.name, order.filter((n) => n === req.name).length);
        if (result instanceof Error) throw result;
        return result;
      },
    },
  );
  const stop = new AbortController();
  const running = controller.start(stop.signal);
  return {
    clock,
    order,
    controller,
    release: () => release(),
    async close() {
      release();
      stop.abort();
      await running;
      client.close();
    },
  };
}

test('a failed reconcile is retried at the priority it was handed out with: an initial-list retry stays behind', async () => {
  const h = harness((name, nth) => (name === 'initial-1' && nth === 1 ? new Error('boom') : undefined));
  try {
    h.controller.queue.add(key('initial-1'), LOW_PRIORITY);
    h.controller.queue.add(key('hold'), LOW_PRIORITY);
    await settle(); // initial-1 failed (retry due in 5 ms); the worker holds on `hold`
    assert.deepEqual(h.order, ['initial-1', 'hold']);
    h.controller.queue.add(key('initial-2'), LOW_PRIORITY);
    h.clock.advance(5); // the retry falls due
    h.release();
    await settle();
    assert.deepEqual(h.order, ['initial-1', 'hold', 'initial-2', 'initial-1'], 'the retry waited at LOW_PRIORITY');
  } finally {
    await h.close();
  }
});

test('a failed high-priority reconcile and a requeueAfter come back at their priority, ahead of priority 0', async () => {
  const h = harness((name, nth) => {
    if (nth > 1) return undefined;
    if (name === 'urgent-error') return new Error('boom');
    if (name === 'urgent-requeue') return requeueAfter(5);
    return undefined;
  });
  try {
    h.controller.queue.add(key('urgent-error'), 10);
    h.controller.queue.add(key('urgent-requeue'), 10);
    h.controller.queue.add(key('hold'));
    await settle();
    assert.deepEqual(h.order, ['urgent-error', 'urgent-requeue', 'hold']);
    h.controller.queue.add(key('fresh'));
    h.clock.advance(5);
    h.release();
    await settle();
    assert.deepEqual(h.order.slice(3), ['urgent-error', 'urgent-requeue', 'fresh']);
  } finally {
    await h.close();
  }
});

test('a result can carry the priority its requeue is queued at (controller-runtime Result.Priority)', async () => {
  const h = harness((name, nth) => {
    if (nth > 1) return undefined;
    if (name === 'boosted') return requeueAfter(5, { priority: 20 });
    if (name === 'lowered') return { requeueAfterMs: 5, priority: LOW_PRIORITY };
    return undefined;
  });
  try {
    h.controller.enqueue({ namespace: 'ns', name: 'lowered' }, 10);
    h.controller.enqueue({ namespace: 'ns', name: 'boosted' }, LOW_PRIORITY);
    h.controller.enqueue({ namespace: 'ns', name: 'hold' });
    await settle();
    assert.deepEqual(h.order, ['lowered', 'hold'], 'enqueue(request, priority) orders them');
    h.release();
    await settle();
    assert.deepEqual(h.order, ['lowered', 'hold', 'boosted']);
    h.controller.queue.add(key('hold'));
    await settle();
    h.controller.queue.add(key('fresh'));
    h.clock.advance(5);
    h.release();
    await settle();
    assert.deepEqual(h.order.slice(4), ['boosted', 'fresh', 'lowered']);
    assert.throws(() => requeueAfter(5, { priority: 1.5 }), UsageError);
  } finally {
    await h.close();
  }
});

test('a result with a priority that is not a safe integer is requeued at the priority it was handed out with', async () => {
  const h = harness((name, nth) =>
    name === 'odd' && nth === 1 ? { requeueAfterMs: 5, priority: Number.NaN } : undefined,
  );
  try {
    h.controller.queue.add(key('odd'), 10);
    h.controller.queue.add(key('hold'));
    await settle();
    h.controller.queue.add(key('fresh'));
    h.clock.advance(5);
    h.release();
    await settle();
    assert.deepEqual(h.order, ['odd', 'hold', 'odd', 'fresh']);
  } finally {
    await h.close();
  }
});

test('a controller started twice: the second start() rejects with a UsageError (AlreadyStarted)', async () => {
  const h = harness(() => undefined);
  await assert.rejects(
    h.controller.start(new AbortController().signal),
    (err: unknown) => err instanceof UsageError && err.code === 'AlreadyStarted',
  );
  await h.close();
});

test('a result with the old requeueAfter field fails the reconcile (retried with backoff), never a silent done', async () => {
  const old = { requeueAfter: 60_000 } as unknown as Result; // as JavaScript or a cast would write it
  const h = harness((_name, nth) => (nth === 1 ? old : undefined));
  try {
    h.controller.queue.add(key('old'));
    await settle();
    assert.deepEqual(h.order, ['old']);
    h.clock.advance(5); // the first backoff step, far before the 60 s the field asked for
    await settle();
    assert.deepEqual(h.order, ['old', 'old'], 'retried as a failure');
  } finally {
    await h.close();
  }
});
