import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Lease } from '../client/builtins.ts';
import { ApiError } from '../client/errors.ts';
import type { ObjectRef } from '../client/resource.ts';
import { UsageError } from '../errors.ts';
import { PausableClock } from '../lease/pausable.fixture.ts';
import { silentLogger } from '../logger.ts';
import { FakeClock } from '../workqueue/clock.ts';
import { type LeaderElectionOptions, LeaderElector, type LeaseClient } from './leader.ts';

const NAMESPACE = 'kube-system';
const NAME = 'opkit-leader';
const LEASE_MS = 15_000;
const RENEW_MS = 10_000;
const RETRY_MS = 2_000;
/** Step of the fake clock: every time the elector reads is a multiple of it (see `advance`). */
const STEP_MS = 50;

type Verb = 'get' | 'create' | 'update';

/** One request the fake client received, at a fake-clock time, with what it answered. */
interface Call {
  readonly verb: Verb;
  readonly at: number;
  outcome: 'pending' | 'ok' | 'error' | 'aborted';
  /** The lease as answered (get) or as written (create, update). */
  answer?: Lease;
}

/** The apiserver's Lease storage, shared by every candidate's client: optimistic concurrency by resourceVersion. */
class LeaseStore {
  readonly #items = new Map<string, Lease>();
  #revision = 100;

  read(ref: ObjectRef): Lease | undefined {
    const stored = this.#items.get(this.#key(ref.namespace, ref.name));
    return stored === undefined ? undefined : structuredClone(stored);
  }

  get(ref: ObjectRef): Lease {
    const stored = this.read(ref);
    if (stored === undefined) throw new ApiError('NotFound', `lease ${ref.name} not found`, { status: 404 });
    return stored;
  }

  create(obj: Lease): Lease {
    const key = this.#key(obj.metadata.namespace, obj.metadata.name);
    if (this.#items.has(key)) throw new ApiError('AlreadyExists', `lease ${key} exists`, { status: 409 });
    return this.#write(key, obj);
  }

  update(obj: Lease): Lease {
    const key = this.#key(obj.metadata.namespace, obj.metadata.name);
    const stored = this.#items.get(key);
    if (stored === undefined) throw new ApiError('NotFound', `lease ${key} not found`, { status: 404 });
    if (obj.metadata.resourceVersion !== stored.metadata.resourceVersion) {
      throw new ApiError('Conflict', `lease ${key}: the object has been modified`, { status: 409 });
    }
    return this.#write(key, obj);
  }

  #write(key: string, obj: Lease): Lease {
    this.#revision += 1;
    const written: Lease = {
      ...structuredClone(obj),
      metadata: { ...obj.metadata, resourceVersion: `${this.#revision}` },
    };
    this.#items.set(key, written);
    return structuredClone(written);
  }

  #key(namespace: string | undefined, name: string | undefined): string {
    return `${namespace ?? ''}/${name ?? ''}`;
  }
}

/**
 * One candidate's connection to the fake apiserver. `mode` says how it answers: normally, by failing at once
 * (Unavailable), or by hanging until the request's signal aborts (then `Aborted`, as the real transport does).
 */
class FakeLeaseClient {
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  readonly calls: Call[] = [];
  readonly #store: LeaseStore;
  readonly #clock: FakeClock;

  constructor(store: LeaseStore, clock: FakeClock) {
    this.#store = store;
    this.#clock = clock;
  }

  get asLeaseClient(): LeaseClient {
    return this as unknown as LeaseClient;
  }

  get(_r: unknown, ref: ObjectRef, options: { signal?: AbortSignal } = {}): Promise<Lease> {
    return this.#serve('get', options.signal, () => this.#store.get(ref));
  }

  create(_r: unknown, obj: Lease, options: { signal?: AbortSignal } = {}): Promise<Lease> {
    return this.#serve('create', options.signal, () => this.#store.create(obj));
  }

  update(_r: unknown, obj: Lease, options: { signal?: AbortSignal } = {}): Promise<Lease> {
    return this.#serve('update', options.signal, () => this.#store.update(obj));
  }

  /** The successful calls of one verb. */
  ok(verb: Verb): Call[] {
    return this.calls.filter((c) => c.verb === verb && c.outcome === 'ok');
  }

  #serve(verb: Verb, signal: AbortSignal | undefined, answer: () => Lease): Promise<Lease> {
    const call: Call = { verb, at: this.#clock.now(), outcome: 'pending' };
    this.calls.push(call);
    if (this.mode === 'hang') {
      return new Promise<Lease>((_resolve, reject) => {
        const abort = () => {
          call.outcome = 'aborted';
          reject(new ApiError('Aborted', `${verb} lease: aborted`, { cause: signal?.reason }));
        };
        if (signal?.aborted) abort();
        else signal?.addEventListener('abort', abort, { once: true });
      });
    }
    if (this.mode === 'fail') {
      call.outcome = 'error';
      return Promise.reject(new ApiError('Unavailable', `${verb} lease: service unavailable`, { status: 503 }));
    }
    try {
      const lease = answer();
      call.outcome = 'ok';
      call.answer = lease;
      return Promise.resolve(structuredClone(lease));
    } catch (err) {
      call.outcome = 'error';
      return Promise.reject(err);
    }
  }
}

/** Shared by the candidates of one test: the fake monotonic clock, the lease storage and a wall clock that can jump. */
class World {
  readonly clock = new FakeClock(1_000_000);
  readonly store = new LeaseStore();
  /** Added to the wall clock (a test makes it jump). */
  wallOffsetMs = 0;
  readonly wallClock = (): Date => new Date(Date.parse('2030-01-01T00:00:00Z') + this.clock.now() + this.wallOffsetMs);

  lease(): Lease | undefined {
    return this.store.read({ namespace: NAMESPACE, name: NAME });
  }
}

interface Candidate {
  readonly identity: string;
  readonly elector: LeaderElector;
  readonly client: FakeLeaseClient;
  readonly stop: AbortController;
  /** Fake-clock times at which onStartedLeading / onStoppedLeading were called. */
  readonly started: number[];
  readonly stopped: number[];
  /** The signal handed to onStartedLeading. */
  leading: AbortSignal | undefined;
  /** Set when `run` resolved. */
  finished: boolean;
  /** `run`'s promise. */
  done: Promise<void>;
}

function electorOptions(client: LeaseClient, world: World, identity: string): LeaderElectionOptions {
  return {
    client,
    namespace: NAMESPACE,
    name: NAME,
    identity,
    leaseDurationMs: LEASE_MS,
    renewDeadlineMs: RENEW_MS,
    retryPeriodMs: RETRY_MS,
    log: silentLogger,
    clock: world.clock,
    wallClock: world.wallClock,
  };
}

function startCandidate(
  world: World,
  identity: string,
  timings: Partial<Pick<LeaderElectionOptions, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs'>> = {},
  clock: FakeClock | PausableClock = world.clock,
): Candidate {
  const client = new FakeLeaseClient(world.store, world.clock);
  const elector = new LeaderElector({ ...electorOptions(client.asLeaseClient, world, identity), ...timings, clock });
  const candidate: Candidate = {
    identity,
    elector,
    client,
    stop: new AbortController(),
    started: [],
    stopped: [],
    leading: undefined,
    finished: false,
    done: Promise.resolve(),
  };
  candidate.done = elector
    .run(candidate.stop.signal, {
      onStartedLeading: (signal) => {
        candidate.started.push(world.clock.now());
        candidate.leading = signal;
      },
      onStoppedLeading: () => {
        candidate.stopped.push(world.clock.now());
      },
    })
    .then(() => {
      candidate.finished = true;
    });
  return candidate;
}

/** Lets promise chains settle: a few macrotask turns, no fake time passes. */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * Moves the fake clock forward by `ms` in steps of STEP_MS, settling after each step. (A due timer fires inside
 * `FakeClock.advance`, but the code it wakes runs after the step, so the elector reads times at step boundaries.)
 */
async function advance(world: World, ms: number, each?: () => void): Promise<void> {
  for (let moved = 0; moved < ms; ) {
    const step = Math.min(STEP_MS, ms - moved);
    world.clock.advance(step);
    moved += step;
    await settle();
    each?.();
  }
}

/** Advances until `condition` holds, at most `limitMs`; fails the test otherwise. */
async function advanceUntil(world: World, condition: () => boolean, limitMs: number, what: string): Promise<void> {
  for (let moved = 0; !condition(); moved += STEP_MS) {
    if (moved >= limitMs) assert.fail(`${what}: not within ${limitMs} ms of fake time`);
    await advance(world, STEP_MS);
  }
}

/** Advances to the fake time `at` (which must not be in the past). */
async function advanceTo(world: World, at: number): Promise<void> {
  assert.ok(at >= world.clock.now(), `advanceTo(${at}) is in the past (now ${world.clock.now()})`);
  await advance(world, at - world.clock.now());
}

/** Stops every candidate and waits for its run to end (a graceful release needs no fake time). */
async function stopAll(world: World, ...candidates: Candidate[]): Promise<void> {
  for (const c of candidates) c.stop.abort();
  await advance(world, STEP_MS);
  await Promise.all(candidates.map((c) => c.done));
}

/** When the candidate last saw the lease's holder or renewTime change (the fake-clock time of that get). */
function lastSeenChange(client: FakeLeaseClient): number {
  let seen: { holder: string | undefined; renewTime: string | undefined } | undefined;
  let at: number | undefined;
  for (const call of client.ok('get')) {
    const holder = call.answer?.spec?.holderIdentity;
    const renewTime = call.answer?.spec?.renewTime;
    if (seen === undefined || seen.holder !== holder || seen.renewTime !== renewTime) {
      seen = { holder, renewTime };
      at = call.at;
    }
  }
  assert.ok(at !== undefined, 'the candidate read the lease at least once');
  return at;
}

test('the constructor refuses timings client-go refuses: leaseDuration <= renewDeadline, renewDeadline <= 1.2 × retryPeriod', () => {
  const world = new World();
  const client = new FakeLeaseClient(world.store, world.clock).asLeaseClient;
  const make = (leaseDurationMs: number, renewDeadlineMs: number, retryPeriodMs: number) =>
    new LeaderElector({
      ...electorOptions(client, world, 'a'),
      leaseDurationMs,
      renewDeadlineMs,
      retryPeriodMs,
    });
  assert.throws(() => make(15_000, 10_000, 9_000), UsageError, 'renewDeadline 10 s <= 1.2 × 9 s');
  assert.throws(() => make(15_000, 12_000, 10_000), UsageError, 'renewDeadline exactly 1.2 × retryPeriod');
  assert.throws(() => make(10_000, 10_000, 2_000), UsageError, 'leaseDuration equal to renewDeadline');
  assert.throws(() => make(9_000, 10_000, 2_000), UsageError, 'leaseDuration shorter than renewDeadline');
  assert.throws(() => make(15_000, 10_000, 0), UsageError, 'a zero retry period');
  assert.doesNotThrow(() => make(15_000, 10_000, 2_000));
  assert.doesNotThrow(
    () => new LeaderElector({ client, namespace: NAMESPACE, name: NAME, identity: 'a', log: silentLogger }),
  );
});

test('a leader whose renewals hang steps down at the renew deadline (aborting the renewal), not a retry period later', async () => {
  const world = new World();
  const a = startCandidate(world, 'a');
  await advanceUntil(world, () => a.started.length === 1, 1_000, 'a leads');
  await advance(world, 5_000); // a few renewals
  a.client.mode = 'hang';
  const renewals = a.client.ok('update');
  assert.ok(renewals.length >= 2, 'the leader renewed while the connection was good');
  // the get and the update of one attempt happen at the same fake instant: the attempt started then
  const lastRenewStart = (renewals.at(-1) as Call).at;
  const deadline = lastRenewStart + RENEW_MS;

  await advanceTo(world, deadline - 100);
  assert.equal(a.stopped.length, 0, 'still leading 100 ms before the renew deadline');
  assert.equal(a.elector.isLeader, true);
  assert.equal(a.leading?.aborted, false);
  assert.ok(
    a.client.calls.some((c) => c.outcome === 'pending'),
    'a renewal is in flight, hanging, at the deadline',
  );

  await advanceTo(world, deadline + 200);
  assert.equal(a.stopped.length, 1, 'onStoppedLeading was called once');
  const stoppedAt = a.stopped[0] as number;
  assert.ok(
    stoppedAt >= deadline && stoppedAt <= deadline + STEP_MS,
    `stepped down at the deadline (+${stoppedAt - deadline} ms), not a retry period after it`,
  );
  assert.equal(a.elector.isLeader, false);
  assert.equal(a.leading?.aborted, true, 'the leading signal aborts on loss');
  assert.equal(a.finished, true, 'run resolves after the loss');
  assert.deepEqual(
    a.client.calls.filter((c) => c.outcome === 'pending'),
    [],
    'the hanging renewal was aborted at the deadline',
  );
  assert.ok(a.client.calls.some((c) => c.outcome === 'aborted'));
  assert.equal(world.lease()?.spec?.holderIdentity, 'a', 'a lost leader does not release: it cannot reach the server');
});

test('a leader whose renewals fail at once steps down at the renew deadline, neither before nor after', async () => {
  const world = new World();
  // a deadline that is no multiple of the retry period: the last wait before it must be shortened to meet it
  const renewDeadlineMs = 9_000;
  const a = startCandidate(world, 'a', { renewDeadlineMs });
  await advanceUntil(world, () => a.started.length === 1, 1_000, 'a leads');
  await advance(world, 5_000);
  a.client.mode = 'fail';
  const deadline = (a.client.ok('update').at(-1) as Call).at + renewDeadlineMs;

  await advanceTo(world, deadline - 100);
  assert.equal(a.stopped.length, 0, 'failed renewals before the deadline do not end leadership');
  assert.ok(a.client.calls.filter((c) => c.outcome === 'error').length >= 2, 'it kept retrying');

  await advanceTo(world, deadline + 200);
  assert.equal(a.stopped.length, 1);
  const stoppedAt = a.stopped[0] as number;
  assert.ok(stoppedAt >= deadline && stoppedAt <= deadline + STEP_MS, `stepped down at +${stoppedAt - deadline} ms`);
  assert.equal(a.finished, true);
});

test('wall-clock jumps of +20 s and -20 s neither end a live leadership nor let a standby take the lease', async () => {
  const world = new World();
  const a = startCandidate(world, 'a');
  await advanceUntil(world, () => a.started.length === 1, 1_000, 'a leads');
  const b = startCandidate(world, 'b');
  const check = () => {
    assert.equal(a.elector.isLeader, true, `a leads at ${world.clock.now()}`);
    assert.equal(a.stopped.length, 0, 'a never stepped down');
    assert.equal(b.started.length, 0, 'b never started leading');
    assert.equal(world.lease()?.spec?.holderIdentity, 'a');
  };

  await advance(world, 10_000, check);
  world.wallOffsetMs = 20_000; // the wall clock jumps 20 s ahead
  await advance(world, 15_000, check);
  world.wallOffsetMs = 0; // and 20 s back
  await advance(world, 15_000, check);
  world.wallOffsetMs = -20_000; // and another 20 s back, behind the monotonic clock
  await advance(world, 20_000, check);

  assert.ok(a.client.ok('update').length >= 25, 'a kept renewing every retry period for 60 s');
  assert.ok(b.client.ok('get').length >= 20, 'b kept campaigning (reading the lease) all along');
  assert.equal(b.client.ok('update').length, 0, 'b never wrote the lease');
  assert.equal(world.lease()?.spec?.leaseTransitions, 0);
  await stopAll(world, a, b);
});

test('a standby takes over a crashed holder’s lease leaseDuration after it last saw the lease change, not earlier', async () => {
  const world = new World();
  const a = startCandidate(world, 'a');
  await advanceUntil(world, () => a.started.length === 1, 1_000, 'a leads');
  const b = startCandidate(world, 'b');
  await advance(world, 10_000);
  assert.equal(b.started.length, 0);

  a.client.mode = 'hang'; // a crashes: it never renews again (and cannot release)
  await advance(world, RETRY_MS * 1.2 + 500); // b reads the lease at least once more: the last renewal is seen
  const seenChangeAt = lastSeenChange(b.client);
  assert.ok(seenChangeAt > (a.client.ok('update').at(-1) as Call).at - RETRY_MS * 1.2 - STEP_MS);

  await advanceTo(world, seenChangeAt + LEASE_MS - 500);
  assert.equal(b.started.length, 0, 'b does not lead 500 ms before the lease runs out by its own clock');
  assert.equal(b.elector.isLeader, false);
  assert.equal(world.lease()?.spec?.holderIdentity, 'a');

  await advanceUntil(world, () => b.started.length === 1, 500 + RETRY_MS + STEP_MS, 'b leads');
  const takenAt = b.started[0] as number;
  assert.ok(
    takenAt >= seenChangeAt + LEASE_MS && takenAt <= seenChangeAt + LEASE_MS + RETRY_MS,
    `b took over ${takenAt - seenChangeAt} ms after it last saw the lease change`,
  );
  assert.equal(a.stopped.length, 1, 'the crashed leader stepped down at its renew deadline');
  assert.ok((a.stopped[0] as number) < takenAt, 'the old leader stopped before the new one started');
  const lease = world.lease();
  assert.equal(lease?.spec?.holderIdentity, 'b');
  assert.equal(lease?.spec?.leaseTransitions, 1);
  await stopAll(world, b);
});

test('a standby judges a holder’s lease by when it saw it change, not by its (stale) renewTime', async () => {
  const world = new World();
  const longAgo = new Date(Date.parse('2020-01-01T00:00:00Z')).toISOString();
  world.store.create({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { namespace: NAMESPACE, name: NAME },
    spec: { holderIdentity: 'ghost', leaseDurationSeconds: LEASE_MS / 1000, renewTime: longAgo, acquireTime: longAgo },
  });
  const b = startCandidate(world, 'b');
  await advance(world, STEP_MS);
  const firstSeen = lastSeenChange(b.client);

  await advanceTo(world, firstSeen + LEASE_MS - 500);
  assert.equal(b.started.length, 0, 'a renewTime years old on another machine’s clock does not make the lease free');

  await advanceUntil(world, () => b.started.length === 1, 500 + RETRY_MS + STEP_MS, 'b leads');
  const takenAt = b.started[0] as number;
  assert.ok(takenAt >= firstSeen + LEASE_MS && takenAt <= firstSeen + LEASE_MS + RETRY_MS);
  assert.equal(world.lease()?.spec?.holderIdentity, 'b');
  await stopAll(world, b);
});

test('a graceful stop releases the lease (empty holder) and a standby takes over within one retry period', async () => {
  const world = new World();
  const a = startCandidate(world, 'a');
  await advanceUntil(world, () => a.started.length === 1, 1_000, 'a leads');
  const b = startCandidate(world, 'b');
  await advance(world, 5_000);

  a.stop.abort();
  await settle();
  await a.done;
  const releasedAt = world.clock.now();
  const released = world.lease();
  assert.equal(released?.spec?.holderIdentity, '', 'the holder is cleared');
  assert.equal(released?.spec?.leaseDurationSeconds, 1);
  assert.equal(a.stopped.length, 0, 'onStoppedLeading is not called after a graceful release');
  assert.equal(a.leading?.aborted, true, 'the leading signal aborts on release');
  assert.equal(a.elector.isLeader, false);

  await advanceUntil(world, () => b.started.length === 1, RETRY_MS * 1.2 + STEP_MS, 'b leads after the release');
  assert.ok((b.started[0] as number) - releasedAt <= RETRY_MS * 1.2 + STEP_MS);
  assert.equal(world.lease()?.spec?.holderIdentity, 'b');
  await stopAll(world, b);
  assert.equal(world.lease()?.spec?.holderIdentity, '');
});

test('a leader paused past its lease may not act once it runs again: its first check ends the leadership, before any timer', async () => {
  const world = new World();
  const aClock = new PausableClock(world.clock);
  const a = startCandidate(world, 'a', {}, aClock);
  await advanceUntil(world, () => a.started.length === 1, 1_000, 'a leads');
  const b = startCandidate(world, 'b');
  await advance(world, 5_000);
  assert.doesNotThrow(() => a.elector.check(), 'a leads with a fresh lease');
  // SIGSTOP: a sends nothing and none of its timers runs; b takes the lease once it has not changed for its duration
  a.client.mode = 'hang';
  aClock.pause();
  await advanceUntil(world, () => b.started.length === 1, LEASE_MS + 5_000, 'b leads');
  await advance(world, 3_000);
  assert.equal(a.elector.isLeader, true, 'a, stopped, has not noticed');
  // SIGCONT: an overdue reconcile or watch event asks the fence before a's renew loop runs
  let refused: unknown;
  let leadingAtCheck: boolean | undefined;
  aClock.resume(() => {
    try {
      a.elector.check();
    } catch (err) {
      refused = err;
    }
    leadingAtCheck = a.leading?.aborted === false;
  });
  assert.ok(refused instanceof DOMException && refused.name === 'AbortError', `refused: ${String(refused)}`);
  assert.equal(leadingAtCheck, false, 'the leading signal aborted at that check');
  assert.equal(a.stopped.length, 1, 'onStoppedLeading ran once, at the check');
  assert.equal(a.elector.isLeader, false);
  a.client.mode = 'ok';
  await advance(world, 3_000);
  assert.equal(a.stopped.length, 1, 'and not again when the overdue renew timer ran');
  assert.equal(a.finished, true);
  await stopAll(world, b);
});
