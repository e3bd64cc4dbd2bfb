import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../logger.ts';
import {
  defineFlags,
  metricsServingSettings,
  parseDuration,
  parseSettings,
  SettingsError,
  settingsFromArgs,
} from './settings.ts';

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

test("--reconcile-timeout (or RECONCILE_TIMEOUT) sets the controllers' reconcile timeout; 0 lifts one set in code", () => {
  assert.equal(settingsFromArgs(base, [], {}).controllers?.reconcileTimeoutMs, undefined);
  assert.equal(settingsFromArgs(base, ['--reconcile-timeout', '30s'], {}).controllers?.reconcileTimeoutMs, 30_000);
  assert.equal(settingsFromArgs(base, [], { RECONCILE_TIMEOUT: '2m' }).controllers?.reconcileTimeoutMs, 120_000);
  const inCode = { ...base, controllers: { reconcileTimeoutMs: 10_000 } };
  assert.equal(settingsFromArgs(inCode, [], {}).controllers?.reconcileTimeoutMs, 10_000);
  assert.equal(settingsFromArgs(inCode, ['--reconcile-timeout=0'], {}).controllers?.reconcileTimeoutMs, 0);
});

test('--kube-api-content-type (or KUBE_API_CONTENT_TYPE) chooses protobuf or JSON for built-in kinds', () => {
  assert.equal(settingsFromArgs(base, [], {}).protobuf, undefined, 'the client default (protobuf) when unset');
  assert.equal(settingsFromArgs(base, ['--kube-api-content-type', 'application/json'], {}).protobuf, false);
  assert.equal(settingsFromArgs(base, [], { KUBE_API_CONTENT_TYPE: 'application/json' }).protobuf, false);
  const flagWins = settingsFromArgs(base, ['--kube-api-content-type=application/vnd.kubernetes.protobuf'], {
    KUBE_API_CONTENT_TYPE: 'application/json',
  });
  assert.equal(flagWins.protobuf, true);
});

test('bad values name the flag or variable and what it accepts', () => {
  const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
    [['--metrics-bind-address', 'nonsense'], {}, /--metrics-bind-address: "nonsense" is not host:port/],
    [['--max-concurrent-reconciles', '0'], {}, /--max-concurrent-reconciles: "0" is not a whole number/],
    [[], { MAX_CONCURRENT_RECONCILES: 'x' }, /MAX_CONCURRENT_RECONCILES: "x"/],
    [['--graceful-shutdown-timeout', 'soon'], {}, /is not a duration/],
    [['--reconcile-timeout', '1 minute'], {}, /--reconcile-timeout: "1 minute" is not a duration/],
    [[], { RECONCILE_TIMEOUT: '-5s' }, /RECONCILE_TIMEOUT: "-5s" is not a duration/],
    [['--log-level', 'loud'], {}, /--log-level: "loud" is not one of/],
    [[], { LEADER_ELECT: 'maybe' }, /LEADER_ELECT: "maybe"/],
    [['--kube-api-content-type', 'yaml'], {}, /--kube-api-content-type: "yaml" is not application\/vnd/],
    [[], { KUBE_API_CONTENT_TYPE: 'text/plain' }, /KUBE_API_CONTENT_TYPE: "text\/plain"/],
    [[], { KUBE_API_CONTENT_TYPE: '__proto__' }, /KUBE_API_CONTENT_TYPE: "__proto__" is not/],
    [['--kube-api-content-type', 'constructor'], {}, /"constructor" is not/],
    [['--frobnicate'], {}, /frobnicate/],
  ];
  for (const [argv, env, message] of cases) {
    assert.throws(
      () => settingsFromArgs(base, argv, env),
      (e) => e instanceof SettingsError && message.test(e.message),
    );
  }
});

test('the Lease timings of leader election: flags or variables, checked together, naming the flags', () => {
  const s = settingsFromArgs(base, ['--leader-election-lease-duration', '6s', '--leader-election-renew-deadline=4s'], {
    LEADER_ELECTION_RETRY_PERIOD: '500ms',
  });
  assert.deepEqual(
    { ...s.leaderElection },
    { leaseDurationMs: 6_000, renewDeadlineMs: 4_000, retryPeriodMs: 500 },
    'durations as the manager takes them',
  );
  const sharded = settingsFromArgs(base, ['--sharding', '--leader-election-lease-duration=6s'], {
    LEADER_ELECTION_RENEW_DEADLINE: '4s',
  });
  assert.deepEqual(
    { ...sharded.sharding },
    { enabled: true, leaseDurationMs: 6_000, renewDeadlineMs: 4_000 },
    'the same timings for the member Leases of a sharded operator',
  );
  assert.equal(settingsFromArgs(base, [], {}).leaderElection?.leaseDurationMs, undefined, 'the defaults when unset');
  assert.equal(settingsFromArgs(base, ['--sharding-filter', 'server'], {}).sharding?.filter, 'server');
  assert.equal(settingsFromArgs(base, [], { SHARDING_FILTER: 'labels' }).sharding?.filter, 'labels');
  assert.throws(
    () => settingsFromArgs(base, ['--sharding-filter=uid'], {}),
    (e) => e instanceof SettingsError && /--sharding-filter: "uid" is not auto, labels or server/.test(e.message),
  );
  assert.throws(
    () => settingsFromArgs(base, ['--leader-election-lease-duration', '4s'], {}),
    (e) =>
      e instanceof SettingsError &&
      /--leader-election-lease-duration.*must be longer than renewDeadline \(10000 ms\)/.test(e.message),
    'a lease shorter than the default renew deadline names the flags',
  );
  assert.throws(
    () => settingsFromArgs(base, [], { LEADER_ELECTION_RETRY_PERIOD: 'often' }),
    (e) => e instanceof SettingsError && /LEADER_ELECTION_RETRY_PERIOD/.test(e.message),
  );
});

test('durations', () => {
  assert.equal(parseDuration('30s'), 30_000);
  assert.equal(parseDuration('500ms'), 500);
  assert.equal(parseDuration('1.5m'), 90_000);
  assert.equal(parseDuration('2h'), 7_200_000);
  assert.equal(parseDuration('45'), 45_000);
});

test('operator flags: typed, from flag or environment, with defaults, next to the manager’s', () => {
  const spec = {
    name: 'demo-operator',
    description: 'Runs demos.',
    flags: defineFlags({
      resyncPeriod: { type: 'duration', env: 'RESYNC_PERIOD', help: 'reconcile everything this often too' },
      workers: { type: 'integer', default: 2, help: 'demo workers' },
      dryRun: { type: 'boolean', env: 'DRY_RUN', help: 'write nothing' },
      region: { type: 'string', placeholder: 'NAME', help: 'where to run' },
    }),
  };
  const parsed = parseSettings(spec, ['--resync-period', '10m', '--leader-elect', '--region=eu'], { DRY_RUN: 'true' });
  assert.ok(!('help' in parsed));
  const resync: number | undefined = parsed.flags.resyncPeriod;
  const workers: number = parsed.flags.workers;
  assert.equal(resync, 600_000);
  assert.equal(workers, 2, 'the default');
  assert.equal(parsed.flags.dryRun, true, 'from the environment');
  assert.equal(parsed.flags.region, 'eu');
  assert.equal(parsed.manager.name, 'demo-operator');
  assert.equal(parsed.manager.leaderElection?.enabled, true, "the manager's flags still work");
  const absent = parseSettings(spec, [], {});
  assert.ok(!('help' in absent) && absent.flags.resyncPeriod === undefined);
  assert.throws(
    () => parseSettings(spec, ['--workers', 'many'], {}),
    (e) => e instanceof SettingsError && /--workers: "many" is not a whole number/.test(e.message),
  );
  assert.throws(
    () => parseSettings(spec, [], { RESYNC_PERIOD: 'soon' }),
    (e) => e instanceof SettingsError && /RESYNC_PERIOD: "soon" is not a duration/.test(e.message),
  );
  assert.throws(
    () => parseSettings({ name: 'x', flags: { namespace: { type: 'string', help: 'clash' } } }, [], {}),
    (e) => e instanceof SettingsError && /--namespace is the manager's own/.test(e.message),
  );
});

test('--help lists the operator’s flags and the manager’s', () => {
  const parsed = parseSettings(
    {
      name: 'demo-operator',
      description: 'Runs demos.',
      flags: { resyncPeriod: { type: 'duration', env: 'RESYNC_PERIOD', help: 'reconcile everything this often too' } },
    },
    ['--help'],
    {},
  );
  assert.ok('help' in parsed);
  assert.match(parsed.help, /^Usage: demo-operator \[options\]\n\nRuns demos\.\n/);
  assert.match(parsed.help, /--resync-period DUR +reconcile everything this often too \(env RESYNC_PERIOD\)/);
  assert.match(parsed.help, /--metrics-bind-address ADDR/);
  assert.ok('help' in parseSettings({ name: 'x' }, ['-h'], {}));
});

test('webhook flags: --webhook-bind-address and --webhook-cert-dir (or their variables) configure the webhook server', () => {
  const s = settingsFromArgs(base, ['--webhook-bind-address', '127.0.0.1:9444'], { WEBHOOK_CERT_DIR: '/certs' });
  assert.equal(s.webhook?.bindAddress, '127.0.0.1:9444');
  assert.equal(s.webhook?.certDir, '/certs');
  assert.throws(() => settingsFromArgs(base, ['--webhook-bind-address', 'nope']), /--webhook-bind-address: "nope"/);
  assert.throws(() => settingsFromArgs(base, ['--webhook-bind-address', '0']), /cannot be turned off/);
});

test('WATCH_NAMESPACE / --namespace with a comma-separated list watches those namespaces (issue 17)', () => {
  assert.deepEqual(settingsFromArgs(base, [], { WATCH_NAMESPACE: 'a, b,a,' }).cache?.namespaces, ['a', 'b']);
  assert.equal(settingsFromArgs(base, ['--namespace', 'a,b'], {}).cache?.namespace, undefined);
  assert.deepEqual(settingsFromArgs(base, ['--namespace', 'a,b'], {}).cache?.namespaces, ['a', 'b']);
  assert.equal(settingsFromArgs(base, ['--namespace', 'solo'], {}).cache?.namespace, 'solo');
});

test('metricsServingSettings reads the metrics settings as the manager does, and refuses what it refuses', () => {
  const cases: [string[], NodeJS.ProcessEnv][] = [
    [[], {}],
    [['--leader-elect', '--metrics-secure', 'false', '--namespace', 'a'], {}],
    [['--metrics-secure'], { METRICS_SECURE: 'false' }],
    [[], { METRICS_SECURE: 'FALSE', METRICS_CERT_PATH: '' }],
    [['--metrics-cert-path', '/certs', '--metrics-cert-name', 'm.crt'], { METRICS_SECURE: '1' }],
  ];
  for (const [argv, env] of cases) {
    const { bindAddress: _, ...manager } = settingsFromArgs(base, argv, env).metrics ?? {};
    assert.deepEqual(metricsServingSettings(argv, env), manager, `${argv.join(' ')} ${JSON.stringify(env)}`);
  }
  assert.deepEqual(metricsServingSettings(['--', '--metrics-secure=false'], {}), {}, 'reading stops at --');
  for (const [argv, env] of [
    [[], { METRICS_SECURE: 'no' }],
    [['--metrics-secure=maybe'], {}],
    [['--metrics-cert-key', 'k'], {}],
  ] as const) {
    let refusal = '';
    assert.throws(
      () => settingsFromArgs(base, argv, env),
      (err) => {
        if (!(err instanceof SettingsError)) return false;
        refusal = err.message;
        return true;
      },
    );
    assert.throws(() => metricsServingSettings(argv, env), { name: 'SettingsError', message: refusal });
  }
});
