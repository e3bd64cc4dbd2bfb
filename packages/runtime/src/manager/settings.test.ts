import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../logger.ts';
import { parseDuration, SettingsError, settingsFromArgs } from './settings.ts';

const base = { name: 'op', log: silentLogger };

test('flags win over environment variables, which win over defaults', () => {
  const s = settingsFromArgs(
    base,
    [
      '--metrics-bind-address',
      ':9090',
      '--leader-elect',
      '--max-concurrent-reconciles',
      '4',
      '--graceful-shutdown-timeout',
      '2m',
    ],
    {
      METRICS_BIND_ADDRESS: ':7070',
      HEALTH_PROBE_BIND_ADDRESS: '127.0.0.1:7071',
      POD_NAMESPACE: 'ops',
      WATCH_NAMESPACE: 'apps',
    },
  );
  assert.equal(s.metrics?.bindAddress, ':9090');
  assert.equal(s.health?.bindAddress, '127.0.0.1:7071');
  assert.equal(s.leaderElection?.enabled, true);
  assert.equal(s.leaderElection?.namespace, 'ops');
  assert.equal(s.cache?.namespace, 'apps');
  assert.equal(s.controllers?.maxConcurrentReconciles, 4);
  assert.equal(s.controllers?.gracefulShutdownTimeoutMs, 120_000);
  const fromEnv = settingsFromArgs(base, [], { LEADER_ELECT: 'true' });
  assert.equal(fromEnv.leaderElection?.enabled, true);
  assert.equal(settingsFromArgs(base, [], {}).leaderElection?.enabled, undefined);
});

test('bad values name the flag or variable and what it accepts', () => {
  const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
    [['--metrics-bind-address', 'nonsense'], {}, /--metrics-bind-address: "nonsense" is not host:port/],
    [['--max-concurrent-reconciles', '0'], {}, /--max-concurrent-reconciles: "0" is not a whole number/],
    [[], { MAX_CONCURRENT_RECONCILES: 'x' }, /MAX_CONCURRENT_RECONCILES: "x"/],
    [['--graceful-shutdown-timeout', 'soon'], {}, /is not a duration/],
    [['--log-level', 'loud'], {}, /--log-level: "loud" is not one of/],
    [[], { LEADER_ELECT: 'maybe' }, /LEADER_ELECT: "maybe"/],
    [['--frobnicate'], {}, /frobnicate/],
  ];
  for (const [argv, env, message] of cases) {
    assert.throws(
      () => settingsFromArgs(base, argv, env),
      (e) => e instanceof SettingsError && message.test(e.message),
    );
  }
});

test('durations', () => {
  assert.equal(parseDuration('30s'), 30_000);
  assert.equal(parseDuration('500ms'), 500);
  assert.equal(parseDuration('1.5m'), 90_000);
  assert.equal(parseDuration('2h'), 7_200_000);
  assert.equal(parseDuration('45'), 45_000);
});

test('WATCH_NAMESPACE / --namespace with a comma-separated list watches those namespaces (issue 17)', () => {
  assert.deepEqual(settingsFromArgs(base, [], { WATCH_NAMESPACE: 'a, b,a,' }).cache?.namespaces, ['a', 'b']);
  assert.equal(settingsFromArgs(base, ['--namespace', 'a,b'], {}).cache?.namespace, undefined);
  assert.deepEqual(settingsFromArgs(base, ['--namespace', 'a,b'], {}).cache?.namespaces, ['a', 'b']);
  assert.equal(settingsFromArgs(base, ['--namespace', 'solo'], {}).cache?.namespace, 'solo');
});
