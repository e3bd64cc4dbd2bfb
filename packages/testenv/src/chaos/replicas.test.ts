import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Replica, type ReplicaOptions } from './replicas.ts';

/** A stand-in operator: prints a tick every 20 ms; on SIGTERM prints "draining" and exits 0 (or ignores it). */
const script = (o: { ignoreTerm?: boolean; exitAfterMs?: number } = {}) => `
  let n = 0;
  setInterval(() => console.log('tick', n++), 20);
  process.on('SIGTERM', () => { ${o.ignoreTerm ? "console.log('ignoring SIGTERM');" : "console.log('draining'); process.exit(0);"} });
  ${o.exitAfterMs !== undefined ? `setTimeout(() => { console.error('fatal: gave up'); process.exit(3); }, ${o.exitAfterMs});` : ''}
`;
const replica = (name: string, o: Parameters<typeof script>[0] = {}, options: ReplicaOptions = {}) =>
  new Replica(
    { name, command: process.execPath, args: ['-e', script(o)], cwd: process.cwd(), env: { REPLICA: name } },
    { restartDelayMs: 50, ...options },
  );

async function until(what: string, check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

test('a killed replica is recorded as the harness’s exit and started again', async () => {
  const r = replica('a');
  r.start();
  try {
    await until('its first tick', () => /tick 0/.test(r.takeLog()));
    const first = r.pid;
    await r.kill();
    assert.deepEqual(
      r.exits.map((e) => [e.signal, e.caused]),
      [['SIGKILL', true]],
    );
    await until('a new process', () => r.running && r.pid !== first);
    assert.equal(r.starts.length, 2);
    assert.deepEqual(r.ownExits, []);
  } finally {
    await r.close();
  }
});

test('an exit the operator chose is its own, with the last lines it printed; it restarts (a crash loop counts up)', async () => {
  const r = replica('b', { exitAfterMs: 100 });
  r.start();
  try {
    await until('two exits of its own', () => r.ownExits.length >= 2);
    const exit = r.ownExits[0];
    assert.equal(exit?.code, 3);
    assert.equal(exit?.caused, false);
    assert.equal(exit?.tail.at(-1), 'fatal: gave up');
  } finally {
    await r.close();
  }
});

test('stop: SIGTERM and the replica drains; one that ignores it is killed after the grace period', async () => {
  const polite = replica('c');
  polite.start();
  await until('its first tick', () => /tick/.test(polite.takeLog()));
  await polite.close(2_000);
  assert.deepEqual(
    polite.exits.map((e) => [e.code, e.caused, e.tail.at(-1)]),
    [[0, true, 'draining']],
  );
  assert.equal(polite.running, false, 'closed: no restart');

  const ignoresTerm = replica('d', { ignoreTerm: true });
  ignoresTerm.start();
  await until('its first tick', () => /tick/.test(ignoresTerm.takeLog()));
  const t0 = Date.now();
  await ignoresTerm.close(300);
  assert.ok(Date.now() - t0 >= 300, 'waited for the grace period');
  assert.deepEqual(
    ignoresTerm.exits.map((e) => [e.signal, e.caused]),
    [['SIGKILL', true]],
  );
});

test('pause stops the process where it stands (no ticks, no exit); resume lets it go on', async () => {
  const r = replica('e');
  r.start();
  try {
    await until('its first tick', () => /tick/.test(r.takeLog()));
    await r.pause();
    await sleep(100); // ticks already on their way are still read
    r.takeLog();
    await sleep(300);
    assert.equal(r.takeLog(), '', 'nothing while paused');
    assert.equal(r.exits.length, 0);
    assert.equal(r.paused, true);
    r.resume();
    await until('ticks again', () => /tick/.test(r.takeLog()));
  } finally {
    await r.close();
  }
  assert.equal(r.exits.length, 1, 'a paused replica is closed too');
});

test('retire: stopped as a scale-down, not started again until start(); stop tells whether the grace period sufficed', async () => {
  const seen: string[] = [];
  const events = {
    started: () => seen.push('started'),
    exited: () => seen.push('exited'),
    paused: (p: boolean) => seen.push(p ? 'paused' : 'resumed'),
    terminating: (lagMs: number) => seen.push(`terminating ${lagMs}`),
  };
  const r = replica('f', {}, { events });
  r.start();
  try {
    await until('its first tick', () => /tick/.test(r.takeLog()));
    assert.equal(await r.retire(2_000), true);
    assert.equal(r.lastExit().startsWith('exit 0 at '), true);
    assert.equal(await r.runningAgain(200), false, 'retired: no restart');
    r.start();
    await until('its first tick again', () => /tick/.test(r.takeLog()));
    await r.pause();
    r.resume();
    assert.equal(await r.stop(2_000, { endpointsLagMs: 700 }), true);
    assert.equal(await r.runningAgain(), true, 'stopped: the supervisor starts it again');
    assert.deepEqual(seen, [
      'started',
      'terminating 0',
      'exited',
      'started',
      'paused',
      'resumed',
      'terminating 700',
      'exited',
      'started',
    ]);
  } finally {
    await r.close();
  }
  const stubborn = replica('g', { ignoreTerm: true });
  stubborn.start();
  await until('its first tick', () => /tick/.test(stubborn.takeLog()));
  assert.equal(await stubborn.stop(200), false, 'killed after the grace period');
  await stubborn.close(200);
});

test('a secret in the output is a leak, also split over two writes; takeLog returns complete lines only', async () => {
  const secret = 'eyJhbGciOiJSUzI1NiIsImtpZCI6InRva2VuIn0';
  const r = new Replica(
    {
      name: 'h',
      command: process.execPath,
      args: [
        '-e',
        `process.stdout.write('partial line, token ${secret.slice(0, 10)}');
         setTimeout(() => process.stdout.write('${secret.slice(10)} end\\nhalf'), 100);
         setInterval(() => {}, 1000);`,
      ],
      cwd: process.cwd(),
      env: {},
    },
    { secrets: [secret, 'never-printed'] },
  );
  r.start();
  try {
    await until('both writes', () => r.peekLog().endsWith('half'));
    assert.deepEqual(r.leaks, [`${secret.slice(0, 6)}…`]);
    assert.equal(r.takeLog(), `partial line, token ${secret} end\n`);
    assert.equal(r.peekLog(), 'half', 'the partial last line waits');
  } finally {
    await r.close();
  }
});
