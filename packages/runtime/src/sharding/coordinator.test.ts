/**
 * The coordinator on a fake clock and an in-memory Lease store with the apiserver's optimistic concurrency: who holds
 * which shard when, checked after every step of the clock — never two hosts running one shard at a time — through
 * joins, a replica cut off from the apiserver, and a graceful stop with a slow drain.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Lease } from '../client/builtins.ts';
import { ApiError } from '../client/errors.ts';
import type { ObjectRef } from '../client/resource.ts';
import { sleep } from '../internal/sleep.ts';
import { PausableClock } from '../lease/pausable.fixture.ts';
import { silentLogger } from '../logger.ts';
import { FakeClock } from '../workqueue/clock.ts';
import { ShardCoordinator, type ShardHost, type ShardLeaseClient } from './coordinator.ts';
import { SHARD_COUNT } from './ring.ts';

const NS = 'ops';
const T = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const DRAIN_MS = 700;

/** Leases with resourceVersions: an update or delete with a stale one fails with Conflict. */
class LeaseStore {
  readonly items = new Map<string, Lease>();
  #rev = 1;

  get(ref: ObjectRef): Lease {
    const l = this.items.get(ref.name);
    if (!l) throw new ApiError('NotFound', `${ref.name} not found`, { status: 404 });
    return structuredClone(l);
  }
  list(selector: string): Lease[] {
    const [k, v] = selector.split('=');
    return [...this.items.values()].filter((l) => l.metadata.labels?.[k ?? ''] === v).map((l) => structuredClone(l));
  }
  create(l: Lease): Lease {
    const name = l.metadata.name ?? '';
    if (this.items.has(name)) throw new ApiError('AlreadyExists', `${name} exists`, { status: 409 });
    return this.#write(l);
  }
  update(l: Lease): Lease {
    const cur = this.items.get(l.metadata.name ?? '');
    if (!cur) throw new ApiError('NotFound', 'not found', { status: 404 });
    if (cur.metadata.resourceVersion !== l.metadata.resourceVersion)
      throw new ApiError('Conflict', 'modified', { status: 409 });
    return this.#write(l);
  }
  delete(name: string, rv?: string): void {
    const cur = this.items.get(name);
    if (!cur) throw new ApiError('NotFound', 'not found', { status: 404 });
    if (rv !== undefined && cur.metadata.resourceVersion !== rv)
      throw new ApiError('Conflict', 'modified', { status: 409 });
    this.items.delete(name);
  }
  #write(l: Lease): Lease {
    const w = structuredClone({ ...l, metadata: { ...l.metadata, resourceVersion: String(++this.#rev) } });
    this.items.set(w.metadata.name ?? '', w);
    return structuredClone(w);
  }
}

/** One replica's connection: answers from the store, or hangs until the request's signal aborts. */
function connection(
  store: LeaseStore,
  state: { hang: boolean; blind?: ((l: Lease) => boolean) | undefined },
): ShardLeaseClient {
  const serve = <T>(signal: AbortSignal | undefined, answer: () => T): Promise<T> => {
    if (state.hang)
      return new Promise((_resolve, reject) => {
        const abort = () => reject(new ApiError('Aborted', 'aborted'));
        if (signal?.aborted) abort();
        else signal?.addEventListener('abort', abort, { once: true });
      });
    try {
      return Promise.resolve(answer());
    } catch (err) {
      return Promise.reject(err);
    }
  };
  type O = { signal?: AbortSignal; labelSelector?: string; preconditions?: { resourceVersion?: string } };
  const client = {
    get: (_r: unknown, ref: ObjectRef, o: O = {}) => serve(o.signal, () => store.get(ref)),
    list: (_r: unknown, o: O = {}) =>
      serve(o.signal, () => ({ items: store.list(o.labelSelector ?? '').filter((l) => !state.blind?.(l)) })),
    create: (_r: unknown, l: Lease, o: O = {}) => serve(o.signal, () => store.create(l)),
    update: (_r: unknown, l: Lease, o: O = {}) => serve(o.signal, () => store.update(l)),
    delete: (_r: unknown, ref: ObjectRef, o: O = {}) =>
      serve(o.signal, () => store.delete(ref.name, o.preconditions?.resourceVersion)),
  };
  return client as unknown as ShardLeaseClient;
}

class World {
  readonly clock = new FakeClock(1_000);
  readonly store = new LeaseStore();
  /** Which replica's host runs each shard now. */
  readonly running = new Map<number, string>();
  readonly violations: string[] = [];
  /** Each replica's filter. */
  readonly filters = new Map<string, string>();
  /** When each replica's host started or stopped a shard: [time, replica, shard, what]. */
  readonly log: [number, string, number, 'start' | 'stop' | 'lose'][] = [];

  async advance(ms: number): Promise<void> {
    for (let t = 0; t < ms; t += 50) {
      this.clock.advance(50);
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    }
  }
}

interface Replica {
  readonly id: string;
  readonly coordinator: ShardCoordinator;
  readonly conn: { hang: boolean; blind?: ((l: Lease) => boolean) | undefined };
  readonly stop: AbortController;
  readonly done: Promise<void>;
  readonly held: Set<number>;
}

function replica(
  world: World,
  id: string,
  clock: PausableClock | FakeClock = world.clock,
  o: { stuckStarting?: boolean; filter?: string } = {},
): Replica {
  const conn: Replica['conn'] = { hang: false };
  const filter = o.filter ?? 'labels';
  const held = new Set<number>();
  const never = new AbortController().signal;
  const host: ShardHost = {
    async acquire(b, signal) {
      // a shard whose caches never list: its start is under way until the stop aborts it
      if (o.stuckStarting) return await new Promise<boolean>((r) => signal.addEventListener('abort', () => r(false)));
      const other = world.running.get(b);
      if (other !== undefined && other !== id) world.violations.push(`${id} started shard ${b} while ${other} ran it`);
      for (const [c, by] of world.running)
        if (world.filters.get(by) !== filter)
          world.violations.push(`${id} (${filter}) started shard ${b} while ${by} (${world.filters.get(by)}) ran ${c}`);
      world.running.set(b, id);
      held.add(b);
      world.log.push([world.clock.now(), id, b, 'start']);
      return true;
    },
    async release(b) {
      await sleep(DRAIN_MS, never, world.clock); // the drain of reconciles under way
      if (world.running.get(b) === id) world.running.delete(b);
      held.delete(b);
      world.log.push([world.clock.now(), id, b, 'stop']);
    },
    lose() {
      for (const b of held) {
        if (world.running.get(b) === id) world.running.delete(b);
        world.log.push([world.clock.now(), id, b, 'lose']);
      }
      held.clear();
    },
  };
  const coordinator = new ShardCoordinator({
    client: connection(world.store, conn),
    namespace: NS,
    ring: 'op',
    identity: id,
    host,
    log: silentLogger,
    clock,
    filter: () => filter,
    ...T,
  });
  world.filters.set(id, filter);
  const stop = new AbortController();
  return { id, coordinator, conn, stop, held, done: coordinator.run(stop.signal) };
}

const holdings = (rs: readonly Replica[]) => rs.map((r) => r.coordinator.held.length);
const covered = (rs: readonly Replica[]) => {
  const all = rs.flatMap((r) => r.coordinator.held);
  return all.length === SHARD_COUNT && new Set(all).size === SHARD_COUNT;
};

test('replicas split the shards evenly; a join moves few; never two run one shard', async () => {
  const w = new World();
  const rs = ['a', 'b', 'c'].map((id) => replica(w, id));
  await w.advance(20_000);
  assert.ok(covered(rs), `held: ${holdings(rs)}`);
  assert.ok(
    holdings(rs).every((n) => n === 10 || n === 11),
    `${holdings(rs)}`,
  );
  const before = new Map(rs.flatMap((r) => r.coordinator.held.map((b) => [b, r.id] as const)));
  const d = replica(w, 'd');
  rs.push(d);
  await w.advance(20_000);
  assert.ok(covered(rs), `held: ${holdings(rs)}`);
  assert.ok(
    holdings(rs).every((n) => n === 8),
    `${holdings(rs)}`,
  );
  const moved = [...before].filter(([b, id]) => !rs.find((r) => r.id === id)?.coordinator.held.includes(b)).length;
  assert.ok(moved <= 12, `a join moved ${moved} shards (8 must move)`);
  assert.deepEqual(w.violations, []);
  for (const r of rs) r.stop.abort();
  await w.advance(5_000);
  await Promise.all(rs.map((r) => r.done));
  assert.equal(w.running.size, 0);
  assert.equal(w.store.list('opkit.dev/shard-role=member').length, 0, 'members left');
  assert.ok(
    w.store.list('opkit.dev/shard-role=shard').every((f) => f.spec?.holderIdentity === ''),
    'fences freed',
  );
});

test('a replica cut off stops at its renew deadline; the others take its shards only after the lease duration', async () => {
  const w = new World();
  const rs = ['a', 'b', 'c'].map((id) => replica(w, id));
  await w.advance(20_000);
  const c = rs[2] as Replica;
  const cShards = c.coordinator.held;
  assert.ok(cShards.length > 0);
  const lastRenew = w.clock.now();
  c.conn.hang = true;
  await w.advance(30_000);
  const lost = w.log.filter(([, id, , what]) => id === 'c' && what === 'lose');
  assert.equal(lost.length, cShards.length, 'c stopped every shard');
  const lostAt = Math.max(...lost.map(([t]) => t));
  assert.ok(lostAt <= lastRenew + T.renewDeadlineMs, `c stopped ${lostAt - lastRenew} ms after its last renewal`);
  const taken = w.log.filter(
    ([t, id, b, what]) => id !== 'c' && what === 'start' && cShards.includes(b) && t > lastRenew,
  );
  assert.equal(new Set(taken.map(([, , b]) => b)).size, cShards.length, 'a and b took every shard of c');
  const firstTaken = Math.min(...taken.map(([t]) => t));
  assert.ok(
    firstTaken >= lastRenew - T.retryPeriodMs * 1.2 + T.leaseDurationMs,
    `taken ${firstTaken - lastRenew} ms after`,
  );
  assert.ok(firstTaken > lostAt, 'c had stopped before anyone took its shards');
  const lastTaken = Math.max(...taken.map(([t]) => t));
  // the Lease last seen changing at most one retry period after c's last renewal; a round right when it runs out
  const bound = T.leaseDurationMs + T.retryPeriodMs * 1.2 + 300;
  assert.ok(
    lastTaken - lastRenew <= bound,
    `all taken ${lastTaken - lastRenew} ms after c's last renewal (≤ ${bound})`,
  );
  assert.ok(covered(rs.slice(0, 2)));
  c.conn.hang = false;
  await w.advance(20_000);
  assert.ok(covered(rs) && holdings(rs).every((n) => n >= 10), `c is back: ${holdings(rs)}`);
  assert.deepEqual(w.violations, []);
  for (const r of rs) r.stop.abort();
  await w.advance(5_000);
});

test('a graceful stop drains, then frees each fence: the others take the shards within a retry period', async () => {
  const w = new World();
  const rs = ['a', 'b', 'c'].map((id) => replica(w, id));
  await w.advance(20_000);
  const b = rs[1] as Replica;
  const stoppedAt = w.clock.now();
  b.stop.abort();
  await w.advance(6_000);
  await b.done;
  assert.ok(covered([rs[0] as Replica, rs[2] as Replica]));
  const last = Math.max(...w.log.filter(([, id, , what]) => id !== 'b' && what === 'start').map(([t]) => t));
  assert.ok(last - stoppedAt <= DRAIN_MS + 2 * T.retryPeriodMs * 1.2, `taken ${last - stoppedAt} ms after the stop`);
  assert.deepEqual(w.violations, []);
  for (const r of rs) r.stop.abort();
  await w.advance(5_000);
});

test('a graceful stop while shards are still starting frees their fences too: none is left to expire', async () => {
  const w = new World();
  const a = replica(w, 'a');
  await w.advance(5_000);
  const d = replica(w, 'd', w.clock, { stuckStarting: true });
  await w.advance(6_000); // d took the fences of its shards; their starts hang
  const named = () => [...w.store.items.values()].filter((l) => l.spec?.holderIdentity === 'd').length;
  assert.ok(named() > 0, 'd wrote the fences of the shards it owns');
  assert.equal(d.held.size, 0, 'none of them runs yet');
  d.stop.abort();
  await w.advance(6_000);
  await d.done;
  assert.equal(named(), 0, 'the stop freed every fence naming d');
  await w.advance(2 * T.retryPeriodMs * 1.2);
  assert.ok(covered([a]), 'a takes them within a retry period, not after the lease duration');
  assert.deepEqual(w.violations, []);
  a.stop.abort();
  await w.advance(5_000);
});

test('a fence taken by hand while held: the shard stops at once; bad timings are refused', async () => {
  const w = new World();
  const a = replica(w, 'a');
  await w.advance(6_000);
  assert.equal(a.coordinator.held.length, SHARD_COUNT);
  const fence = w.store.get({ name: 'op-shard-5' });
  w.store.update({ ...fence, spec: { ...fence.spec, holderIdentity: 'intruder' } });
  await w.advance(3_000);
  assert.equal(a.coordinator.held.includes(5), false);
  assert.equal(a.held.has(5), false);
  a.stop.abort();
  await w.advance(3_000);
  assert.throws(
    () =>
      new ShardCoordinator({
        client: connection(w.store, { hang: false }),
        namespace: NS,
        ring: 'x',
        identity: 'y',
        host: {} as ShardHost,
        log: silentLogger,
        leaseDurationMs: 5_000,
        renewDeadlineMs: 6_000,
      }),
    /sharding: leaseDuration \(5000 ms\) must be longer than renewDeadline \(6000 ms\)/,
  );
});

test('a killed replica restarted under a new identity: the others free its fences, so it takes them with no wait of its own', async () => {
  const w = new World();
  const rs = ['a', 'b', 'c'].map((id) => replica(w, id));
  await w.advance(20_000);
  const c = rs[2] as Replica;
  const cShards = c.coordinator.held;
  const killedAt = w.clock.now();
  c.conn.hang = true; // as dead: it never writes again
  c.stop.abort();
  await w.advance(10_000);
  rs.push(replica(w, 'c2')); // the supervisor's restart, 10 s later: c2 alone would judge c dead only 25 s after the kill
  await w.advance(25_000);
  const taken = w.log.filter(
    ([t, id, b, what]) => id !== 'c' && what === 'start' && cShards.includes(b) && t > killedAt,
  );
  assert.equal(new Set(taken.map(([, , b]) => b)).size, cShards.length);
  const last = Math.max(...taken.map(([t]) => t));
  const bound = T.leaseDurationMs + 2 * T.retryPeriodMs * 1.2 + 500;
  assert.ok(last - killedAt <= bound, `the last shard of c taken ${last - killedAt} ms after the kill (≤ ${bound})`);
  assert.ok(covered([rs[0] as Replica, rs[1] as Replica, rs[3] as Replica]));
  assert.deepEqual(w.violations, []);
  for (const r of rs) r.stop.abort();
  await w.advance(5_000);
});

test('a replica resumed after a pause past its Lease acts on nothing: its first check stops every shard, before any timer', async () => {
  const w = new World();
  // a's clock: while a is paused, the world's time goes on; on resume a sees it all at once, its timers all overdue
  const aClock = new PausableClock(w.clock);
  const a = replica(w, 'a', aClock);
  await w.advance(6_000);
  assert.equal(a.coordinator.held.length, SHARD_COUNT);
  assert.equal(a.coordinator.holds(), true);
  // the pause: a neither renews nor runs a timer, as SIGSTOP does; b joins and, after the lease duration, takes over
  a.conn.hang = true;
  aClock.pause();
  // while stopped, a acts on nothing: what matters is what it does once it runs again (checked below)
  for (const shard of a.held) w.running.delete(shard);
  const b = replica(w, 'b');
  const pausedAt = w.clock.now();
  await w.advance(T.leaseDurationMs + 8_000);
  assert.ok(b.coordinator.held.length > 0, 'b took shards while a was paused');
  assert.equal(a.held.size, SHARD_COUNT, 'a, stopped, has not noticed');
  // SIGCONT: before any of a's overdue timers runs, a check is asked (as an overdue reconcile or a watch event asks
  // the gate): it must say no, and have stopped every shard already
  assert.ok(w.clock.now() - pausedAt > T.renewDeadlineMs);
  let holds: boolean | undefined;
  let runningAtCheck = -1;
  aClock.resume(() => {
    holds = a.coordinator.holds();
    runningAtCheck = a.held.size;
  });
  assert.equal(holds, false, 'the paused replica may not act');
  assert.equal(runningAtCheck, 0, 'and its host stopped every shard at that check');
  assert.deepEqual(a.coordinator.held, []);
  a.conn.hang = false;
  await w.advance(20_000);
  assert.ok(covered([a, b]) && holdings([a, b]).every((n) => n === 16), `a is back: ${holdings([a, b])}`);
  assert.deepEqual(w.violations, []);
  a.stop.abort();
  b.stop.abort();
  await w.advance(5_000);
});

test('two filters never run at once: a take waits for every fence to carry its filter, even with views that disagree', async () => {
  const w = new World();
  const s1 = replica(w, 's1', w.clock, { filter: 'server' });
  const s2 = replica(w, 's2', w.clock, { filter: 'server' });
  await w.advance(20_000);
  assert.ok(covered([s1, s2]), `held: ${holdings([s1, s2])}`);
  assert.ok(
    w.store
      .list('opkit.dev/shard-role=shard')
      .every((f) => f.metadata.annotations?.['opkit.dev/shard-filter'] === 'server'),
    'the server replicas marked every fence',
  );
  // a labels replica joins, but the server replicas cannot see its member Lease: both sides think they lead
  const notL = (l: Lease) => l.spec?.holderIdentity === 'l';
  s1.conn.blind = notL;
  s2.conn.blind = notL;
  const l = replica(w, 'l', w.clock, { filter: 'labels' });
  await w.advance(20_000);
  assert.equal(l.coordinator.held.length, 0, 'the fences are held under the other filter: the labels replica waits');
  assert.equal(l.coordinator.members, 3);
  // s1 leaves: its fences come free, and both the labels replica and the blind s2 (which thinks it owns them all)
  // mark them for their own filter; whoever wins, never both run
  s1.stop.abort();
  await w.advance(20_000);
  await s1.done;
  assert.ok(l.coordinator.held.length === 0 || s2.coordinator.held.length === 0, `${holdings([l, s2])}`);
  assert.deepEqual(w.violations, []);
  // s2 sees again: labels lead, s2 hands every shard over and stands by
  s2.conn.blind = undefined;
  await w.advance(30_000);
  assert.equal(l.coordinator.held.length, SHARD_COUNT);
  assert.equal(s2.coordinator.held.length, 0);
  const roles = w.store.list('opkit.dev/shard-role=standby').map((m) => m.spec?.holderIdentity);
  assert.deepEqual(roles, ['s2'], 'the left-out server replica is a standby member, which older replicas do not count');
  // the labels replica leaves: the server replica takes every shard back
  l.stop.abort();
  await w.advance(30_000);
  await l.done;
  assert.equal(s2.coordinator.held.length, SHARD_COUNT);
  assert.deepEqual(w.violations, []);
  s2.stop.abort();
  await w.advance(5_000);
  await s2.done;
});

test('a lone replica of the other filter takes over from a dead holder: its fences are freed, marked, then taken', async () => {
  const w = new World();
  const l = replica(w, 'l', w.clock, { filter: 'labels' });
  await w.advance(10_000);
  assert.equal(l.coordinator.held.length, SHARD_COUNT);
  const s = replica(w, 's', w.clock, { filter: 'server' });
  await w.advance(10_000);
  assert.equal(s.coordinator.held.length, 0, 'labels lead while l lives');
  l.conn.hang = true; // l is cut off for good: its fences keep naming it
  await w.advance(40_000);
  assert.equal(s.coordinator.held.length, SHARD_COUNT);
  assert.deepEqual(w.violations, []);
  s.stop.abort();
  l.stop.abort();
  await w.advance(15_000);
  await Promise.all([s.done, l.done]);
});
