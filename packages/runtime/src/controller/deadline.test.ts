/**
 * The per-reconcile timeout with a fake clock and no apiserver (requests are queued by hand): the signal aborts at the
 * deadline, the timeout is counted, and what the abort caused goes to the error policy as a `ReconcileTimeoutError`;
 * anything else the reconcile ended with is kept. The same against a real apiserver (a request hung on a frozen
 * connection): the reconcile-timeout test in test/manager.test.ts.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Cache } from '../cache/cache.ts';
import { offlineClient } from '../client/offline.fixture.ts';
import { objectKey } from '../client/resource.ts';
import { UsageError } from '../errors.ts';
import { Metrics } from '../metrics.ts';
import { FakeClock } from '../workqueue/index.ts';
import { Controller } from './controller.ts';
import { ReconcileTimeoutError } from './deadline.ts';
import { type ErrorInfo, retryWithBackoff } from './policy.ts';
import { type ReconcileContext, TerminalError } from './reconcile.ts';

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A one-worker controller with `reconcileTimeoutMs` whose reconcile is `body`, recording what its policy saw. */
function harness(reconcileTimeoutMs: number | undefined, body: (ctx: ReconcileContext) => Promise<void>) {
  const clock = new FakeClock(1_000_000);
  const client = offlineClient();
  const metrics = new Metrics({ processMetrics: false });
  const seen: { err: unknown; info: ErrorInfo }[] = [];
  const contexts: ReconcileContext[] = [];
  const controller = new Controller(
    {
      name: 't',
      client,
      cache: new Cache({ client }),
      clock,
      metrics,
      gracefulShutdownTimeoutMs: 50,
      ...(reconcileTimeoutMs !== undefined ? { reconcileTimeoutMs } : {}),
      errorPolicy: (err, info) => {
        seen.push({ err, info });
        return retryWithBackoff('debug');
      },
    },
    {
      async reconcile(_req, ctx) {
        contexts.push(ctx);
        await body(ctx);
      },
    },
  );
  const stop = new AbortController();
  const running = controller.start(stop.signal);
  const sample = (name: string) =>
    Number(
      new RegExp(`^${name}\\{controller="t"(?:,result="success")?\\} (\\d+)$`, 'm').exec(
        metrics.registry.metrics(),
      )?.[1],
    );
  return {
    clock,
    controller,
    seen,
    contexts,
    timeouts: () => sample('controller_runtime_reconcile_timeouts_total'),
    successes: () => sample('controller_runtime_reconcile_total'),
    async close() {
      if (stop.signal.aborted) return;
      stop.abort();
      await running;
      client.close();
    },
  };
}

const key = objectKey({ namespace: 'ns', name: 'a' });

test('at the deadline the signal aborts, the timeout is counted, and the error policy sees a ReconcileTimeoutError', async () => {
  const h = harness(1_000, (ctx) => {
    return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
  });
  try {
    assert.equal(h.timeouts(), 0, 'the series exists from the start, at 0');
    h.controller.queue.add(key);
    await settle();
    h.clock.advance(999);
    await settle();
    assert.equal(h.contexts[0]?.signal.aborted, false, 'not before the deadline');
    h.clock.advance(1);
    await settle();
    assert.equal(h.contexts[0]?.signal.aborted, true);
    assert.ok(h.contexts[0]?.signal.reason instanceof ReconcileTimeoutError, 'the signal says why');
    assert.equal(h.timeouts(), 1);
    assert.equal(h.seen.length, 1);
    const err = h.seen[0]?.err;
    assert.ok(err instanceof ReconcileTimeoutError);
    assert.equal(err.code, 'ReconcileTimeout');
    assert.equal(err.timeoutMs, 1_000);
    assert.match(err.message, /timeout of 1000 ms/);
    assert.equal(h.seen[0]?.info.stopping, false, 'a timeout is not a stop');
    assert.equal(h.controller.queue.numRequeues(key), 1, 'retried with backoff');
  } finally {
    await h.close();
  }
});

test('a reconcile that ignores its signal keeps its worker; what it returns after the deadline is kept', async () => {
  let finish: () => void = () => {};
  let nth = 0;
  const h = harness(500, async () => {
    if (++nth === 1) await new Promise<void>((resolve) => (finish = resolve));
  });
  try {
    h.controller.queue.add(key);
    await settle();
    h.clock.advance(600);
    await settle();
    assert.equal(h.timeouts(), 1, 'counted when the deadline passed, while it still runs');
    h.controller.queue.add(key);
    await settle();
    assert.equal(h.contexts.length, 1, 'never two reconciles of one request at once');
    finish();
    await settle();
    assert.equal(h.seen.length, 0, 'a normal return is a success, as in controller-runtime');
    assert.equal(h.successes(), 2, 'then the request added meanwhile');
  } finally {
    await h.close();
  }
});

test('an error the abort caused becomes a ReconcileTimeoutError with it as cause; a TerminalError stays terminal', async () => {
  let nth = 0;
  const h = harness(500, async (ctx) => {
    nth++;
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    if (nth === 1) throw new Error('my request was cut off', { cause: ctx.signal.reason });
    throw new TerminalError('bad input, found after the deadline');
  });
  try {
    h.controller.queue.add(key);
    await settle();
    h.clock.advance(500);
    await settle();
    const first = h.seen[0]?.err;
    assert.ok(first instanceof ReconcileTimeoutError);
    assert.match(String((first.cause as Error).message), /cut off/);
    h.clock.advance(10); // the backoff: the second reconcile
    await settle();
    h.clock.advance(500);
    await settle();
    assert.ok(h.seen[1]?.err instanceof TerminalError, 'not turned into a timeout');
    assert.equal(h.timeouts(), 2);
  } finally {
    await h.close();
  }
});

test('a reconcile that ends in time cancels its timer; a stop before the deadline is not a timeout', async () => {
  let nth = 0;
  const h = harness(500, async (ctx) => {
    nth++;
    if (nth === 2) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
  });
  try {
    h.controller.queue.add(key);
    await settle();
    assert.equal(h.successes(), 1);
    h.clock.advance(10_000);
    await settle();
    assert.equal(h.timeouts(), 0, "the first reconcile's timer was cancelled");
    h.controller.queue.add(key);
    await settle();
    assert.equal(nth, 2);
    await h.close(); // the drain (50 ms, real time) aborts the reconcile's signal: the stop comes first
    h.clock.advance(10_000);
    assert.equal(h.timeouts(), 0, 'the stop came first');
  } finally {
    await h.close();
  }
});

test('without a limit no timer runs: a long reconcile keeps its signal', async () => {
  let finish: () => void = () => {};
  const h = harness(undefined, () => new Promise<void>((resolve) => (finish = resolve)));
  try {
    h.controller.queue.add(key);
    await settle();
    h.clock.advance(24 * 3_600_000);
    await settle();
    assert.equal(h.contexts[0]?.signal.aborted, false);
    finish();
    await settle();
    assert.equal(h.successes(), 1);
    assert.equal(h.timeouts(), 0);
  } finally {
    await h.close();
  }
});

test('a negative or non-numeric reconcileTimeoutMs is refused when the controller is made, naming it', () => {
  const client = offlineClient();
  for (const bad of [-1, Number.NaN]) {
    assert.throws(
      () =>
        new Controller(
          { name: 'c', client, cache: new Cache({ client }), reconcileTimeoutMs: bad },
          { reconcile: async () => {} },
        ),
      (e) => e instanceof UsageError && /reconcileTimeoutMs/.test(e.message),
    );
  }
  client.close();
});
