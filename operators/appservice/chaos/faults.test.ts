import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crashSigns, logViolations, takeoverSeconds } from './faults.ts';

const line = (level: string, time: string, msg: string, err: string) =>
  JSON.stringify({ level, time, msg, code: err.split(' ')[0], err });

test('logViolations: real errors of a fault pass; a Forbidden passes only while the apiserver restarted', () => {
  const at = Date.parse('2026-11-30T02:52:00.000Z');
  const windows = [[at - 5_000, at + 2_000]] as const;
  const forbidden = line('error', '2026-11-30T02:52:00.500Z', 'reconcile failed: retrying with backoff', 'Forbidden x');
  const later = line('error', '2026-11-30T02:53:00.000Z', 'reconcile failed: retrying with backoff', 'Forbidden x');
  const network = line('error', '2026-11-30T02:53:00.000Z', 'reconcile failed', 'Network connect ECONNREFUSED');
  assert.deepEqual(logViolations('r', [forbidden, network, ''].join('\n'), windows), []);
  const v = logViolations('r', [later, 'plain text', '{"broken'].join('\n'), windows);
  assert.deepEqual(
    v.map((x) => x.invariant),
    ['log', 'log', 'log'],
  );
  assert.match(v[0]?.detail ?? '', /Forbidden/);
  assert.match(v[1]?.detail ?? '', /unstructured output/);
  assert.match(v[2]?.detail ?? '', /broken log line/);
  assert.deepEqual(logViolations('r', 'appservice-operator: leader election lost'), []);
});

test('crashSigns: stack traces and unhandled rejections', () => {
  assert.equal(crashSigns('r', 'Error: boom\n    at main (file:///app/main.ts:3:9)\n').length, 1);
  assert.equal(crashSigns('r', 'Unhandled promise rejection').length, 1);
  assert.equal(crashSigns('r', '{"level":"info","msg":"ok"}\n').length, 0);
});

test('takeoverSeconds: became leader → the last starting workers after it, the longest takeover of the log', () => {
  const entry = (time: string, msg: string) => JSON.stringify({ level: 'info', time, msg });
  const log = [
    entry('2026-12-04T10:00:00.000Z', 'became leader'),
    entry('2026-12-04T10:00:00.020Z', 'starting workers'),
    entry('2026-12-04T10:00:00.045Z', 'starting workers'),
    'not json',
    entry('2026-12-04T10:00:05.000Z', 'shutdown requested'),
    entry('2026-12-04T10:00:09.000Z', 'became leader'),
    entry('2026-12-04T10:00:09.300Z', 'starting workers'),
    '',
  ].join('\n');
  assert.equal(takeoverSeconds(log), 0.3);
  assert.equal(takeoverSeconds(entry('2026-12-04T10:00:00.000Z', 'became leader')), undefined, 'no workers yet');
  assert.equal(takeoverSeconds(entry('2026-12-04T10:00:00.000Z', 'starting workers')), undefined, 'no takeover');
});
