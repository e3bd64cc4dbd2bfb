import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isProcessAlive } from '@opkit/testenv';
import { exitCodeOf, type RelayedSignal, relay, SAME_REQUEST_MS } from './run-process.ts';

test('opkit run exits as a shell would: the exit code, or 128 + the number of the signal that ended the operator', () => {
  assert.equal(exitCodeOf(0, null), 0);
  assert.equal(exitCodeOf(3, null), 3);
  assert.equal(exitCodeOf(null, 'SIGINT'), 130);
  assert.equal(exitCodeOf(null, 'SIGTERM'), 143);
  assert.equal(exitCodeOf(null, 'SIGKILL'), 137);
  assert.equal(exitCodeOf(null, null), 1);
});

test('a Ctrl-C that the operator handles cleanly (exit 0) still makes opkit run exit 130; a failure keeps its code', () => {
  assert.equal(exitCodeOf(0, null, 'SIGINT'), 130);
  assert.equal(exitCodeOf(null, 'SIGINT', 'SIGINT'), 130);
  assert.equal(exitCodeOf(0, null, 'SIGTERM'), 143);
  assert.equal(exitCodeOf(0, null, 'SIGHUP'), 129, 'a closed terminal');
  assert.equal(exitCodeOf(1, null, 'SIGINT'), 1, 'the operator failed while stopping: its code');
});

test('relay: each stop request reaches the operator once; the same one delivered twice is dropped; job control is passed on', () => {
  const t0 = 10_000;
  const table: [RelayedSignal, number, number | undefined, ReturnType<typeof relay>, string][] = [
    ['SIGINT', t0, undefined, { action: 'pass', signal: 'SIGINT' }, 'the first Ctrl-C'],
    ['SIGTERM', t0, undefined, { action: 'pass', signal: 'SIGTERM' }, 'a supervisor stops the run'],
    ['SIGQUIT', t0, undefined, { action: 'pass', signal: 'SIGQUIT' }, 'Ctrl-\\'],
    ['SIGHUP', t0, undefined, { action: 'pass', signal: 'SIGTERM' }, 'the terminal closed: the operator drains'],
    ['SIGINT', t0 + 3, t0, { action: 'drop' }, 'the same Ctrl-C, passed on by npx 3 ms later'],
    ['SIGTERM', t0 + SAME_REQUEST_MS - 1, t0, { action: 'drop' }, 'still the same request'],
    ['SIGINT', t0 + SAME_REQUEST_MS, t0, { action: 'pass', signal: 'SIGINT' }, 'a second Ctrl-C: exit at once'],
    ['SIGTSTP', t0, undefined, { action: 'suspend' }, 'Ctrl-Z stops the operator and opkit run'],
    ['SIGTSTP', t0 + 1, t0, { action: 'suspend' }, 'Ctrl-Z is never dropped'],
    ['SIGCONT', t0, undefined, { action: 'resume' }, 'fg or bg continues the operator'],
  ];
  for (const [signal, now, last, want, why] of table) assert.deepEqual(relay(signal, now, last), want, why);
});

/**
 * A stand-in operator with the runtime's signal rule (manager.ts `run()`): the first SIGINT or SIGTERM logs
 * `shutdown requested` and drains for 3 s, a second one logs `second signal: exiting now` and exits 1.
 */
const FAKE_OPERATOR = `
let stopping = false;
const onSignal = (sig) => {
  if (stopping) { console.log('second signal: exiting now (' + sig + ')'); process.exit(1); }
  stopping = true;
  console.log('shutdown requested (' + sig + ')');
  setTimeout(() => { console.log('drained'); process.exit(0); }, 3000);
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
console.log('operator ready ' + process.pid);
setInterval(() => {}, 1 << 30);
`;

/** `opkit run`'s part in a process of its own: runs the stand-in operator through `runOperatorProcess`. */
const harness = (operator: string) => `
import { runOperatorProcess } from ${JSON.stringify(new URL('./run-process.ts', import.meta.url).pathname)};
const code = await runOperatorProcess({ file: ${JSON.stringify(operator)}, args: [], cwd: process.cwd(), env: process.env }, console.log);
console.log('opkit run exits ' + code);
process.exitCode = code;
`;

interface Harness {
  readonly pid: number;
  log(): string;
  readonly exited: Promise<number | null>;
}

/** Starts the harness and waits for the operator; `t.after` ends whatever the test leaves running. */
async function startHarness(t: TestContext): Promise<Harness> {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-run-process-'));
  const operator = join(dir, 'operator.mjs');
  await writeFile(operator, FAKE_OPERATOR);
  await writeFile(join(dir, 'harness.ts'), harness(operator));
  // the leader of its own process group, as a shell starts a foreground job
  const child = spawn(process.execPath, [join(dir, 'harness.ts')], {
    detached: true,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  void exited.then(() => rm(dir, { recursive: true, force: true }));
  t.after(() => {
    const operator = Number(/^operator ready (\d+)$/m.exec(out)?.[1] ?? 0);
    for (const group of [child.pid ?? 0, operator].filter((p) => p > 0)) {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // ended
      }
    }
  });
  await waitUntil(() => out.includes('operator ready'));
  return { pid: child.pid ?? 0, log: () => out, exited };
}

/** Polls `check` for 10 s; fails with `what()` (the state seen) when it does not come true. */
async function waitUntil(check: () => boolean, what: () => string = () => ''): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after 10 s ${what()}`);
    await sleep(20);
  }
}

test('Ctrl-C to the process group (as a terminal sends it), twice as npx delivers it: the operator sees one SIGINT and drains', {
  timeout: 30_000,
}, async (t) => {
  const run = await startHarness(t);
  process.kill(-run.pid, 'SIGINT'); // the terminal: every process of the foreground group
  process.kill(run.pid, 'SIGINT'); // a wrapper passing the same Ctrl-C on (npx)
  assert.equal(await run.exited, 130, run.log());
  assert.match(run.log(), /^shutdown requested \(SIGINT\)$/m);
  assert.doesNotMatch(run.log(), /second signal/);
  assert.match(run.log(), /^drained$/m);
});

test('a second Ctrl-C, a moment later, still makes the operator exit at once', { timeout: 30_000 }, async (t) => {
  const run = await startHarness(t);
  process.kill(-run.pid, 'SIGINT');
  await sleep(SAME_REQUEST_MS + 100);
  process.kill(-run.pid, 'SIGINT');
  assert.equal(await run.exited, 1, run.log());
  assert.match(run.log(), /^second signal: exiting now \(SIGINT\)$/m);
});

test('opkit run killed with SIGKILL: its guard sends the operator SIGTERM, and it drains and ends', {
  timeout: 30_000,
}, async (t) => {
  const run = await startHarness(t);
  const operator = Number(/^operator ready (\d+)$/m.exec(run.log())?.[1]);
  process.kill(run.pid, 'SIGKILL'); // opkit run alone: it passes nothing on
  await run.exited;
  await waitUntil(() => run.log().includes('drained'));
  assert.match(run.log(), /^shutdown requested \(SIGTERM\)$/m);
  assert.doesNotMatch(run.log(), /second signal/);
  await waitUntil(() => !isProcessAlive(operator));
});

/** The state letter of `pid` in /proc (`T`: stopped). */
const stateOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2)[0];
};

test('Ctrl-Z stops the operator with opkit run, and fg (SIGCONT to the group) continues both', {
  timeout: 30_000,
}, async (t) => {
  const run = await startHarness(t);
  const operator = Number(/^operator ready (\d+)$/m.exec(run.log())?.[1]);
  process.kill(-run.pid, 'SIGTSTP');
  const states = () => `(opkit run ${stateOf(run.pid)}, operator ${stateOf(operator)})`;
  await waitUntil(() => stateOf(run.pid) === 'T' && stateOf(operator) === 'T', states);
  process.kill(-run.pid, 'SIGCONT');
  await waitUntil(() => stateOf(run.pid) !== 'T' && stateOf(operator) !== 'T', states);
  process.kill(-run.pid, 'SIGINT');
  assert.equal(await run.exited, 130, run.log());
  assert.match(run.log(), /^drained$/m);
});
