import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seeded } from '@opkit/testenv/chaos';
import { UsageError } from '../errors.ts';
import { FakeClock } from './clock.ts';
import { LOW_PRIORITY, WorkQueue, type WorkQueueMetrics } from './queue.ts';
import { ItemExponentialRateLimiter } from './ratelimiter.ts';

/** Lets pending promise callbacks run (microtasks only, no time passes). */
async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

interface Tracked<T> {
  settled: boolean;
  value: T | undefined;
}

function track<T>(promise: Promise<T>): Tracked<T> {
  const tracked: Tracked<T> = { settled: false, value: undefined };
  void promise.then((value) => {
    tracked.settled = true;
    tracked.value = value;
  });
  return tracked;
}

function newQueue(metrics?: WorkQueueMetrics): { queue: WorkQueue; clock: FakeClock } {
  const clock = new FakeClock(1_000_000);
  const queue = new WorkQueue({ name: 'test', clock, ...(metrics === undefined ? {} : { metrics }) });
  return { queue, clock };
}

test('a key that is already waiting is not queued twice', async () => {
  const { queue } = newQueue();
  queue.add('ns/a');
  queue.add('ns/a');
  queue.add('ns/b');
  queue.add('ns/a');
  assert.equal(queue.len(), 2);
  assert.equal(await queue.get(), 'ns/a');
  assert.equal(await queue.get(), 'ns/b');
  assert.equal(queue.len(), 0);
  const next = track(queue.get());
  await flush();
  assert.equal(next.settled, false, 'nothing else was queued');
});

test('a key added while processing is held back until done(), then processed exactly once more', async () => {
  const { queue } = newQueue();
  queue.add('ns/a');
  assert.equal(await queue.get(), 'ns/a');
  queue.add('ns/a');
  queue.add('ns/a');
  assert.equal(queue.len(), 0, 'a processing key does not wait in the queue');
  const second = track(queue.get());
  await flush();
  assert.equal(second.settled, false, 'the key is not handed to a second worker while processing');
  queue.done('ns/a');
  await flush();
  assert.deepEqual(second, { settled: true, value: 'ns/a' });
  const third = track(queue.get());
  queue.done('ns/a');
  await flush();
  assert.equal(third.settled, false, 'the two re-adds were one');
  assert.equal(queue.len(), 0);
  queue.done('ns/unknown'); // done() for a key that is not processing is ignored
});

test('distinct keys come out in FIFO order; a re-added key keeps its place', async () => {
  const { queue } = newQueue();
  for (const key of ['ns/c', 'ns/a', 'ns/b', 'ns/a', 'ns/c']) queue.add(key);
  const got = [await queue.get(), await queue.get(), await queue.get()];
  assert.deepEqual(got, ['ns/c', 'ns/a', 'ns/b']);
  queue.add('ns/z');
  queue.done('ns/a'); // not dirty: nothing happens
  queue.add('ns/b'); // processing: queued behind ns/z once done
  queue.done('ns/b');
  assert.equal(await queue.get(), 'ns/z');
  assert.equal(await queue.get(), 'ns/b');
});

test('the FIFO stays correct across its internal compaction', async () => {
  const { queue } = newQueue();
  const keys = Array.from({ length: 3_000 }, (_, i) => `ns/k${i}`);
  for (const key of keys.slice(0, 2_000)) queue.add(key);
  const got: (string | undefined)[] = [];
  for (let i = 0; i < 1_500; i++) got.push(await queue.get());
  for (const key of keys.slice(2_000)) queue.add(key);
  while (queue.len() > 0) got.push(await queue.get());
  assert.deepEqual(got, keys);
});

test('addAfter queues the key only when the clock reaches its time; delay <= 0 adds at once', () => {
  const { queue, clock } = newQueue();
  queue.addAfter('ns/a', 100);
  assert.equal(queue.len(), 0);
  clock.advance(99);
  assert.equal(queue.len(), 0);
  clock.advance(1);
  assert.equal(queue.len(), 1);
  assert.equal(clock.pendingTimers(), 0);
  queue.addAfter('ns/b', 0);
  queue.addAfter('ns/c', -5);
  assert.equal(queue.len(), 3);
});

test('addAfter keeps the earliest ready time for a key', async () => {
  const { queue, clock } = newQueue();
  queue.addAfter('ns/a', 100);
  queue.addAfter('ns/a', 50); // earlier: replaces
  queue.addAfter('ns/a', 200); // later: ignored
  clock.advance(50);
  assert.equal(queue.len(), 1);
  assert.equal(await queue.get(), 'ns/a');
  queue.done('ns/a');
  clock.advance(1_000);
  assert.equal(queue.len(), 0, 'the superseded times do not add the key again');
  assert.equal(clock.pendingTimers(), 0);
});

test('keys falling due together are queued in schedule order, across several timer firings', async () => {
  const { queue, clock } = newQueue();
  queue.addAfter('ns/late', 30);
  queue.addAfter('ns/x', 10);
  queue.addAfter('ns/y', 10);
  queue.addAfter('ns/early', 5);
  assert.equal(clock.pendingTimers(), 1, 'one timer, for the earliest key');
  clock.advance(10);
  assert.deepEqual([await queue.get(), await queue.get(), await queue.get()], ['ns/early', 'ns/x', 'ns/y']);
  clock.advance(20);
  assert.equal(await queue.get(), 'ns/late');
  assert.equal(clock.pendingTimers(), 0);
});

test('many superseded schedules are compacted and the live ones still fire', () => {
  const { queue, clock } = newQueue();
  for (let i = 0; i < 500; i++) queue.addAfter('ns/a', 10_000 - i);
  queue.addAfter('ns/b', 20_000);
  clock.advance(9_501);
  assert.equal(queue.len(), 1);
  clock.advance(20_000);
  assert.equal(queue.len(), 2);
  assert.equal(clock.pendingTimers(), 0);
});

test('addAfter of a key that is waiting still schedules it: deduplicated if still waiting, else added again', async () => {
  const { queue, clock } = newQueue();
  queue.add('ns/a');
  queue.addAfter('ns/a', 10);
  clock.advance(10);
  assert.equal(queue.len(), 1, 'still waiting when due: deduplicated');
  assert.equal(await queue.get(), 'ns/a');
  queue.done('ns/a');

  queue.add('ns/a');
  queue.addAfter('ns/a', 10);
  assert.equal(await queue.get(), 'ns/a');
  queue.done('ns/a');
  assert.equal(queue.len(), 0);
  clock.advance(10);
  assert.equal(queue.len(), 1, 'processed before it was due: the schedule adds it again');
});

test('addAfter of a key that is processing adds it when due, to be handed out after done()', async () => {
  const { queue, clock } = newQueue();
  queue.add('ns/a');
  assert.equal(await queue.get(), 'ns/a');
  queue.addAfter('ns/a', 10);
  clock.advance(10);
  assert.equal(queue.len(), 0);
  queue.done('ns/a');
  assert.equal(queue.len(), 1);
});

test('addRateLimited waits the rate limiter delay; numRequeues counts and forget resets', async () => {
  const clock = new FakeClock();
  const queue = new WorkQueue({ name: 'test', clock, rateLimiter: new ItemExponentialRateLimiter<string>(5, 1_000) });
  queue.addRateLimited('ns/a');
  assert.equal(queue.numRequeues('ns/a'), 1);
  clock.advance(4);
  assert.equal(queue.len(), 0);
  clock.advance(1);
  assert.equal(await queue.get(), 'ns/a');
  queue.addRateLimited('ns/a'); // failed again
  queue.done('ns/a');
  clock.advance(9);
  assert.equal(queue.len(), 0);
  clock.advance(1);
  assert.equal(await queue.get(), 'ns/a');
  assert.equal(queue.numRequeues('ns/a'), 2);
  queue.forget('ns/a'); // succeeded
  queue.done('ns/a');
  assert.equal(queue.numRequeues('ns/a'), 0);
  queue.addRateLimited('ns/a');
  clock.advance(5);
  assert.equal(queue.len(), 1);
});

test('the default rate limiter (5 ms per-item base) is used when none is given', () => {
  const { queue, clock } = newQueue();
  for (let i = 0; i < 4; i++) queue.addRateLimited('ns/a'); // 5, 10, 20, 40 ms: the earliest time wins
  assert.equal(queue.numRequeues('ns/a'), 4);
  clock.advance(4);
  assert.equal(queue.len(), 0);
  clock.advance(1);
  assert.equal(queue.len(), 1);
  queue.forget('ns/a');
  assert.equal(queue.numRequeues('ns/a'), 0);
  assert.equal(clock.pendingTimers(), 0, 'the later schedules of the same key left no timers behind');
});

test('concurrent getters are woken in call order, each with a different key', async () => {
  const { queue } = newQueue();
  const seen: string[] = [];
  const worker = async (id: number): Promise<void> => {
    const key = await queue.get();
    if (key !== undefined) seen.push(`${id}:${key}`);
  };
  const workers = [worker(1), worker(2), worker(3)];
  await flush();
  queue.add('ns/a');
  queue.add('ns/a');
  queue.add('ns/b');
  assert.equal(queue.len(), 0, 'keys go straight to waiting workers');
  await flush();
  assert.deepEqual(seen, ['1:ns/a', '2:ns/b']);
  queue.add('ns/a'); // still processing by worker 1: worker 3 must not get it
  await flush();
  assert.equal(seen.length, 2);
  queue.done('ns/a');
  await flush();
  assert.deepEqual(seen, ['1:ns/a', '2:ns/b', '3:ns/a']);
  await Promise.all(workers);
});

test('shutDown wakes every waiting getter with undefined and drops waiting and delayed keys', async () => {
  const { queue, clock } = newQueue();
  const getters = [track(queue.get()), track(queue.get())];
  queue.add('ns/a'); // taken by the first getter
  queue.add('ns/b');
  queue.add('ns/c');
  queue.addAfter('ns/d', 100);
  await flush();
  assert.equal(queue.len(), 1);
  assert.equal(queue.shuttingDown, false);
  const blocked = track(queue.get()); // takes ns/c
  queue.shutDown();
  queue.shutDown();
  assert.equal(queue.shuttingDown, true);
  assert.equal(queue.len(), 0);
  assert.equal(clock.pendingTimers(), 0);
  await flush();
  assert.deepEqual(
    getters.map((g) => g.value),
    ['ns/a', 'ns/b'],
  );
  assert.equal(blocked.value, 'ns/c');
  const waiting = [track(queue.get()), track(queue.get())];
  queue.add('ns/e');
  queue.addAfter('ns/e', 0);
  queue.addRateLimited('ns/e');
  assert.equal(queue.len(), 0, 'adds after shutdown are ignored');
  assert.equal(await queue.get(), undefined);
  await flush();
  assert.deepEqual(waiting, [
    { settled: true, value: undefined },
    { settled: true, value: undefined },
  ]);
  queue.done('ns/a'); // workers may still finish their items
});

test('shutDown resolves getters that were already waiting with undefined', async () => {
  const { queue } = newQueue();
  const getters = [track(queue.get()), track(queue.get()), track(queue.get())];
  await flush();
  queue.shutDown();
  await flush();
  assert.ok(getters.every((g) => g.settled && g.value === undefined));
});

test('shutDownWithDrain resolves only after every in-flight key is done; get() returns undefined meanwhile', async () => {
  const { queue } = newQueue();
  for (const key of ['ns/a', 'ns/b', 'ns/c']) queue.add(key);
  const a = await queue.get();
  const b = await queue.get();
  assert.equal(a, 'ns/a');
  assert.equal(b, 'ns/b');
  queue.add('ns/a'); // dirty while processing: dropped by the shutdown
  const drained = track(queue.shutDownWithDrain());
  assert.equal(queue.shuttingDown, true);
  assert.equal(await queue.get(), undefined, 'the waiting ns/c is not handed out');
  await flush();
  assert.equal(drained.settled, false);
  queue.done('ns/a');
  await flush();
  assert.equal(drained.settled, false);
  assert.equal(queue.len(), 0, 'the dirty key is not queued again');
  queue.done('ns/b');
  await flush();
  assert.equal(drained.settled, true);
  await queue.shutDownWithDrain(); // nothing in flight: resolves at once
});

test('shutDown during a drain ends the drain at once', async () => {
  const { queue } = newQueue();
  queue.add('ns/a');
  await queue.get();
  const drained = track(queue.shutDownWithDrain());
  await flush();
  assert.equal(drained.settled, false);
  queue.shutDown();
  await flush();
  assert.equal(drained.settled, true);
});

test('metric hooks: depth, added, queueLatency, workDuration, retried', async () => {
  const calls: string[] = [];
  const metrics: WorkQueueMetrics = {
    depth: (n) => calls.push(`depth ${n}`),
    added: () => calls.push('added'),
    queueLatency: (s) => calls.push(`latency ${s}`),
    workDuration: (s) => calls.push(`work ${s}`),
    retried: () => calls.push('retried'),
  };
  const { queue, clock } = newQueue(metrics);
  queue.add('ns/a');
  queue.add('ns/a');
  queue.add('ns/b');
  assert.deepEqual(calls.splice(0), ['depth 1', 'added', 'depth 2', 'added'], 'a deduplicated add is not counted');
  clock.advance(1_500);
  assert.equal(await queue.get(), 'ns/a');
  assert.deepEqual(calls.splice(0), ['depth 1', 'latency 1.5']);
  clock.advance(250);
  queue.done('ns/a');
  assert.deepEqual(calls.splice(0), ['work 0.25']);
  queue.addRateLimited('ns/a');
  assert.deepEqual(calls.splice(0), ['retried']);
  clock.advance(5);
  assert.deepEqual(calls.splice(0), ['depth 2', 'added']);
  queue.shutDown();
  assert.deepEqual(calls.splice(0), ['depth 0']);
  queue.add('ns/c');
  queue.addRateLimited('ns/c');
  assert.deepEqual(calls, [], 'nothing is counted after shutdown');
});

test('a key handed straight to a waiting getter reports its latency and does not change the depth', async () => {
  const calls: string[] = [];
  const { queue, clock } = newQueue({
    depth: (n) => calls.push(`depth ${n}`),
    queueLatency: (s) => calls.push(`latency ${s}`),
  });
  const got = track(queue.get());
  queue.add('ns/a');
  await flush();
  assert.equal(got.value, 'ns/a');
  queue.add('ns/a'); // processing: dirty, not waiting
  clock.advance(2_000);
  queue.done('ns/a');
  assert.equal(await queue.get(), 'ns/a');
  assert.deepEqual(calls, ['latency 0', 'depth 1', 'depth 0', 'latency 2']);
});

test('unfinishedWorkSeconds and longestRunningProcessorSeconds follow the processing keys', async () => {
  const { queue, clock } = newQueue();
  assert.equal(queue.unfinishedWorkSeconds(), 0);
  assert.equal(queue.longestRunningProcessorSeconds(), 0);
  queue.add('ns/a');
  queue.add('ns/b');
  await queue.get();
  clock.advance(3_000);
  await queue.get();
  clock.advance(1_000);
  assert.equal(queue.unfinishedWorkSeconds(), 5);
  assert.equal(queue.longestRunningProcessorSeconds(), 4);
  queue.done('ns/a');
  assert.equal(queue.unfinishedWorkSeconds(), 1);
  assert.equal(queue.longestRunningProcessorSeconds(), 1);
});

test('property: random adds, gets and dones across 4 workers never duplicate or share a key, nor lose an add', async () => {
  const keys = ['ns/a', 'ns/b', 'ns/c', 'ns/d', 'ns/e', 'ns/f'];
  for (const seed of [1, 2, 3, 42, 1234, 99_999]) {
    const random = seeded(seed); // a failing sequence can be replayed
    const pick = <T>(xs: readonly T[]): T => {
      const x = xs[Math.floor(random() * xs.length)];
      if (x === undefined) throw new Error('pick from an empty list');
      return x;
    };
    const queue: WorkQueue = new WorkQueue({
      name: 'property',
      clock: new FakeClock(),
      metrics: { depth: (n) => assert.equal(n, queue.len(), `seed ${seed}: depth hook reports len()`) },
    });
    type Worker = { state: 'idle' } | { state: 'waiting' } | { state: 'holding'; key: string };
    const workers: Worker[] = Array.from({ length: 4 }, () => ({ state: 'idle' }));
    /** Keys added since they were last handed out: each must be handed out exactly once more. */
    const needed = new Set<string>();
    let handedOut = 0;
    let stopped = false;
    const failures: unknown[] = [];

    const receive = (w: number, key: string | undefined): void => {
      if (stopped) return;
      assert.ok(key !== undefined, `seed ${seed}: get() resolved undefined before shutdown`);
      for (const [other, worker] of workers.entries()) {
        if (worker.state === 'holding') {
          assert.notEqual(worker.key, key, `seed ${seed}: ${key} handed to worker ${w} while worker ${other} has it`);
        }
      }
      assert.ok(needed.has(key), `seed ${seed}: ${key} handed out without an add since its last processing`);
      needed.delete(key);
      handedOut++;
      workers[w] = { state: 'holding', key };
    };

    const checkInvariants = (): void => {
      if (failures.length > 0) throw failures[0];
      const held = new Set(workers.flatMap((w) => (w.state === 'holding' ? [w.key] : [])));
      const shouldWait = [...needed].filter((k) => !held.has(k));
      assert.equal(queue.len(), shouldWait.length, `seed ${seed}: each needed, unheld key waits exactly once`);
      if (queue.len() > 0) {
        assert.ok(
          workers.every((w) => w.state !== 'waiting'),
          `seed ${seed}: a worker waits while keys are waiting`,
        );
      }
    };

    const step = async (drain: boolean): Promise<void> => {
      const w = Math.floor(random() * workers.length);
      const worker = workers[w];
      if (!drain && random() < 0.4) {
        const key = pick(keys);
        queue.add(key);
        needed.add(key);
      } else if (worker?.state === 'idle') {
        workers[w] = { state: 'waiting' };
        // An assertion failing in the callback would escape the test; keep it for checkInvariants() to rethrow.
        void queue.get().then((key) => {
          try {
            receive(w, key);
          } catch (error) {
            failures.push(error);
          }
        });
      } else if (worker?.state === 'holding') {
        queue.done(worker.key);
        workers[w] = { state: 'idle' };
      }
      await flush();
      checkInvariants();
    };

    for (let i = 0; i < 400; i++) await step(false);
    for (let i = 0; i < 200 && (needed.size > 0 || workers.some((w) => w.state === 'holding')); i++) await step(true);
    assert.equal(needed.size, 0, `seed ${seed}: every add was processed`);
    assert.ok(handedOut > 50, `seed ${seed}: the run did some work`);
    stopped = true;
    queue.shutDown();
    await flush();
  }
});

test('waitedMs: how long the key now processing waited before get() handed it out; forgotten on done()', async () => {
  const { queue, clock } = newQueue();
  queue.add('ns/a');
  clock.advance(250);
  assert.equal(queue.waitedMs('ns/a'), undefined, 'not processing yet');
  assert.equal(await queue.get(), 'ns/a');
  assert.equal(queue.waitedMs('ns/a'), 250);
  queue.add('ns/a'); // re-added while processing: the current wait is unchanged
  clock.advance(100);
  assert.equal(queue.waitedMs('ns/a'), 250);
  queue.done('ns/a');
  assert.equal(await queue.get(), 'ns/a');
  assert.equal(queue.waitedMs('ns/a'), 100, 'the second round waited from its re-add');
  queue.done('ns/a');
  assert.equal(queue.waitedMs('ns/a'), undefined);
});

test('priorities: the highest comes out first, FIFO within one; an add at a higher priority moves a waiting key up', async () => {
  const { queue } = newQueue();
  for (const k of ['low-1', 'low-2', 'low-3']) queue.add(k, LOW_PRIORITY);
  queue.add('fresh-1');
  queue.add('low-2', 0); // a fresh change of an object still waiting from the initial list
  queue.add('fresh-2', 0);
  queue.add('fresh-1', LOW_PRIORITY); // a lower add never moves a key down
  assert.equal(queue.len(), 5);
  const order: (string | undefined)[] = [];
  for (let i = 0; i < 5; i++) order.push(await queue.get());
  assert.deepEqual(order, ['fresh-1', 'low-2', 'fresh-2', 'low-1', 'low-3']);
  assert.equal(queue.len(), 0);
});

test('priorities: a key re-added while processing comes back at the priority asked for; delayed adds keep theirs', async () => {
  const { queue, clock } = newQueue();
  queue.add('a', LOW_PRIORITY);
  assert.equal(await queue.get(), 'a');
  queue.add('a', LOW_PRIORITY);
  queue.add('b', LOW_PRIORITY);
  queue.add('a', 5);
  queue.done('a');
  assert.equal(await queue.get(), 'a', 'a waits at 5, ahead of b');
  queue.done('a');
  queue.addAfter('c', 100, 10);
  clock.advance(100);
  assert.equal(await queue.get(), 'c');
  assert.equal(await queue.get(), 'b');
});

test('getWithPriority hands out the priority the key waited at; get() and getWithPriority() share one FIFO', async () => {
  const { queue } = newQueue();
  queue.add('low', LOW_PRIORITY);
  queue.add('fresh');
  queue.add('urgent', 10);
  queue.add('low-up', LOW_PRIORITY);
  queue.add('low-up', 3); // moved up: handed out at 3
  assert.deepEqual(await queue.getWithPriority(), { item: 'urgent', priority: 10 });
  assert.deepEqual(await queue.getWithPriority(), { item: 'low-up', priority: 3 });
  assert.equal(await queue.get(), 'fresh');
  assert.deepEqual(await queue.getWithPriority(), { item: 'low', priority: LOW_PRIORITY });
  const waiting = track(queue.getWithPriority());
  await flush();
  assert.equal(waiting.settled, false);
  queue.add('late', 7); // straight to the waiting getter, with its priority
  await flush();
  assert.deepEqual(waiting.value, { item: 'late', priority: 7 });
  queue.add('urgent', LOW_PRIORITY); // re-added while processing: after done(), at the priority of that add
  queue.done('urgent');
  assert.deepEqual(await queue.getWithPriority(), { item: 'urgent', priority: LOW_PRIORITY });
  queue.shutDown();
  assert.equal(await queue.getWithPriority(), undefined);
});

test('priorities: addRateLimited and addAfter re-add at the priority given, so a low-priority retry stays behind fresh keys', async () => {
  const clock = new FakeClock();
  const queue = new WorkQueue({ name: 'test', clock, rateLimiter: new ItemExponentialRateLimiter<string>(5, 1_000) });
  queue.add('initial-1', LOW_PRIORITY);
  queue.add('initial-2', LOW_PRIORITY);
  const first = await queue.getWithPriority();
  assert.deepEqual(first, { item: 'initial-1', priority: LOW_PRIORITY });
  queue.addRateLimited('initial-1', first?.priority); // it failed: retried at the priority it had
  queue.done('initial-1');
  queue.addAfter('requeued', 5, LOW_PRIORITY);
  clock.advance(5);
  queue.add('fresh');
  const order: (string | undefined)[] = [];
  for (let i = 0; i < 4; i++) order.push(await queue.get());
  assert.deepEqual(order, ['fresh', 'initial-2', 'initial-1', 'requeued']);
});

test('priorities: a key scheduled twice keeps the earliest time and the highest priority (controller-runtime)', async () => {
  const { queue, clock } = newQueue();
  queue.addAfter('a', 10, LOW_PRIORITY);
  queue.addAfter('a', 50, 5); // later, but higher: the time stays 10 ms, the priority becomes 5
  queue.addAfter('b', 10, 5);
  queue.addAfter('b', 5, LOW_PRIORITY); // earlier, but lower: the time becomes 5 ms, the priority stays 5
  queue.add('c');
  clock.advance(5);
  assert.deepEqual(await queue.getWithPriority(), { item: 'b', priority: 5 });
  assert.deepEqual(await queue.getWithPriority(), { item: 'c', priority: 0 });
  clock.advance(5);
  assert.deepEqual(await queue.getWithPriority(), { item: 'a', priority: 5 });
  clock.advance(1_000);
  assert.equal(queue.len(), 0, 'the superseded schedules did not fire again');
});

test('priorities must be safe integers', () => {
  const { queue } = newQueue();
  for (const bad of [Number.NaN, Infinity, 0.5]) {
    assert.throws(() => queue.add('a', bad), UsageError);
    assert.throws(() => queue.addAfter('a', 10, bad), UsageError);
    assert.throws(() => queue.addRateLimited('a', bad), UsageError);
  }
  assert.equal(queue.len(), 0);
});
