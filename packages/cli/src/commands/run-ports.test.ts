import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { settingsFromArgs } from '@opkit/runtime/manager';
import type { CliError } from '../errors.ts';
import {
  bindProblem,
  choosePorts,
  describeEndpoints,
  endpointRequests,
  freePort,
  lastFlag,
  localUrl,
} from './run-ports.ts';
import type { ReservingRun } from './run-reservations.ts';

test('lastFlag reads both forms, keeps the last, and stops at --', () => {
  assert.equal(lastFlag(['--a', '1', '--a=2'], 'a'), '2');
  assert.equal(lastFlag(['--a=2', '--a', '3'], 'a'), '3');
  assert.equal(lastFlag(['--ab', '1'], 'a'), undefined);
  assert.equal(lastFlag(['--', '--a', '1'], 'a'), undefined);
  assert.equal(lastFlag(['--a', '--b'], 'a'), undefined, 'a flag is no value');
});

test('the addresses as the operator’s settings read them: the flag, then the variable; 0 is off', () => {
  const given = (argv: readonly string[], env: NodeJS.ProcessEnv) =>
    endpointRequests(argv, env, { webhooks: true }).map((r) =>
      typeof r.given === 'object' ? [r.given.from, r.given.address, r.given.host, r.given.port] : r.given,
    );
  assert.deepEqual(given([], {}), [undefined, undefined, undefined]);
  assert.deepEqual(given([], { HEALTH_PROBE_BIND_ADDRESS: '127.0.0.1:9000', METRICS_BIND_ADDRESS: '' }), [
    undefined,
    ['environment', '127.0.0.1:9000', '127.0.0.1', 9000],
    undefined,
  ]);
  assert.deepEqual(
    given(
      ['--health-probe-bind-address', ':9001', '--webhook-bind-address=[::1]:9443', '--metrics-bind-address', '0'],
      {
        HEALTH_PROBE_BIND_ADDRESS: ':9000',
      },
    ),
    ['off', ['flag', ':9001', '0.0.0.0', 9001], ['flag', '[::1]:9443', '::1', 9443]],
  );
  assert.deepEqual(
    given(['--', '--metrics-bind-address', ':9100'], {}),
    [undefined, undefined, undefined],
    'flags after -- are not the operator’s',
  );
  assert.equal(endpointRequests([], {}, { webhooks: false }).length, 2, 'no webhook server without webhooks');
});

test('a port the user gave that is in use fails naming the port, the flag that moves it, and that nothing was written', async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const taken = typeof address === 'object' && address ? address.port : 0;
  const probe = { bindProblem, freePort, reserved: new Map() };
  const choose = (metrics: string) =>
    choosePorts(
      endpointRequests(
        ['--metrics-bind-address', metrics, '--health-probe-bind-address', '0'],
        {},
        { webhooks: false },
      ),
      probe,
    );
  try {
    await assert.rejects(choose(`127.0.0.1:${taken}`), (err: CliError) => {
      assert.equal(err.code, 'PortInUse');
      assert.match(
        err.message,
        new RegExp(`^port ${taken} \\(--metrics-bind-address 127\\.0\\.0\\.1:${taken}\\) is in use on this machine`),
      );
      assert.match(err.message, /opkit run -- --metrics-bind-address 127\.0\.0\.1:<port>, or 0 to turn it off/);
      assert.match(err.message, /; nothing was written to the cluster$/);
      return true;
    });
    await assert.rejects(choose(`:${taken}`), /is in use/, 'all interfaces include the taken loopback port');
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  assert.equal((await choose(`127.0.0.1:${taken}`))[0]?.port, taken);
});

/** A machine where the ports of `taken` are bound and free ports are handed out from `free`, in order. */
function machine(
  taken: readonly number[],
  free: readonly number[],
  reserved: ReadonlyMap<number, ReservingRun> = new Map(),
) {
  const queue = [...free];
  const asked: string[] = [];
  return {
    asked,
    bindProblem: async (host: string, port: number) => {
      asked.push(`${host}:${port}`);
      return taken.includes(port) ? 'EADDRINUSE' : undefined;
    },
    freePort: async () => queue.shift() ?? 0,
    reserved,
  };
}

test('without addresses, every server gets 127.0.0.1 on its default port, and opkit sets only those', async () => {
  const m = machine([], [40001]);
  const endpoints = await choosePorts(endpointRequests([], {}, { webhooks: true }), m);
  assert.deepEqual(
    endpoints.map((e) => [e.role, e.from, e.set, e.variable]),
    [
      ['metrics', 'default', '127.0.0.1:8443', 'METRICS_BIND_ADDRESS'],
      ['health', 'default', '127.0.0.1:8081', 'HEALTH_PROBE_BIND_ADDRESS'],
      ['webhook', 'free', '127.0.0.1:40001', 'WEBHOOK_BIND_ADDRESS'],
    ],
  );
  assert.deepEqual(m.asked, ['127.0.0.1:8443', '127.0.0.1:8081'], 'the defaults are tried on loopback only');
  assert.deepEqual(describeEndpoints(endpoints), [
    'metrics: https://127.0.0.1:8443/metrics (a bearer token allowed to get /metrics)',
    'health: http://127.0.0.1:8081/healthz and /readyz',
    'webhooks: https://127.0.0.1:40001',
  ]);
  const plain = await choosePorts(
    endpointRequests(['--metrics-secure=false'], {}, { webhooks: false }),
    machine([], []),
  );
  assert.deepEqual(describeEndpoints(plain), [
    'metrics: http://127.0.0.1:8080/metrics',
    'health: http://127.0.0.1:8081/healthz and /readyz',
  ]);
});

test('a taken default, or one another run has chosen, gives way to a free loopback port, never a shared one', async () => {
  const m = machine([8443], [8081, 40002, 40003, 40004], new Map([[40002, { pid: 4242, started: '' }]]));
  const endpoints = await choosePorts(endpointRequests([], {}, { webhooks: true }), m);
  assert.deepEqual(
    endpoints.map((e) => [e.role, e.from, e.port]),
    [
      ['metrics', 'free', 8081], // the kernel's free port happens to be health's default…
      ['health', 'free', 40003], // …so health, whose default is now used, and 40002 (another run's), move on
      ['webhook', 'free', 40004],
    ],
  );
  assert.equal(endpoints[0]?.taken, 8443);
  assert.match(
    describeEndpoints(endpoints)[0] ?? '',
    /^metrics: https:\/\/127\.0\.0\.1:8081\/metrics \(port 8443 is taken; /,
  );
  assert.match(describeEndpoints(endpoints)[1] ?? '', /\(port 8081 is taken\)$/);
});

test('addresses the user gave are kept (nothing set), checked, and a taken one fails naming the port and the flag', async () => {
  const argv = ['--metrics-bind-address', ':9100', '--health-probe-bind-address', '0'];
  const env = { WEBHOOK_BIND_ADDRESS: '127.0.0.1:9443' };
  const endpoints = await choosePorts(endpointRequests(argv, env, { webhooks: true }), machine([], []));
  assert.deepEqual(
    endpoints.map((e) => [e.role, e.from, e.address, e.set]),
    [
      ['metrics', 'flag', ':9100', undefined],
      ['health', 'off', '0', undefined],
      ['webhook', 'environment', '127.0.0.1:9443', undefined],
    ],
  );
  assert.deepEqual(describeEndpoints(endpoints), [
    'metrics: https://127.0.0.1:9100/metrics (--metrics-bind-address :9100, all interfaces; a bearer token allowed to get /metrics)',
    'health: off',
    'webhooks: https://127.0.0.1:9443 (WEBHOOK_BIND_ADDRESS=127.0.0.1:9443)',
  ]);
  await assert.rejects(
    choosePorts(endpointRequests(argv, env, { webhooks: true }), machine([9443], [])),
    (err: CliError) =>
      err.code === 'PortInUse' &&
      /^port 9443 \(WEBHOOK_BIND_ADDRESS=127\.0\.0\.1:9443\) is in use on this machine/.test(err.message) &&
      /nothing was written to the cluster$/.test(err.message),
  );
  const forHelp = await choosePorts(endpointRequests(argv, env, { webhooks: true }), machine([9443], []), {
    check: false,
  });
  assert.equal(forHelp.length, 3, '--help does not check');
});

test('an address the user gave on a port another live run has reserved fails, naming that run, before any write', async () => {
  const other = { pid: 4242, started: '2026-01-02T03:04:05.000Z' };
  const argv = ['--metrics-bind-address', '127.0.0.1:8443'];
  await assert.rejects(
    choosePorts(endpointRequests(argv, {}, { webhooks: true }), machine([], [40001], new Map([[8443, other]]))),
    (err: CliError) =>
      err.code === 'PortInUse' &&
      err.message.startsWith(
        'port 8443 (--metrics-bind-address 127.0.0.1:8443) is reserved by another opkit run on this machine (pid 4242, started 2026-01-02T03:04:05.000Z), whose operator may not listen yet: ',
      ) &&
      /opkit run -- --metrics-bind-address 127\.0\.0\.1:<port>, or 0 to turn it off; nothing was written to the cluster$/.test(
        err.message,
      ),
  );
  const fromEnv = { WEBHOOK_BIND_ADDRESS: ':9443' };
  await assert.rejects(
    choosePorts(endpointRequests([], fromEnv, { webhooks: true }), machine([], [], new Map([[9443, other]]))),
    (err: CliError) =>
      err.code === 'PortInUse' && err.message.startsWith('port 9443 (WEBHOOK_BIND_ADDRESS=:9443) is reserved by'),
  );
});

test('port 0: a free port the operator picks, except for webhooks, whose port the configurations need', async () => {
  const metrics = await choosePorts(
    endpointRequests(['--metrics-bind-address', '127.0.0.1:0'], {}, { webhooks: false }),
    machine([], []),
  );
  assert.equal(
    describeEndpoints(metrics)[0],
    'metrics: on a free port the operator chooses (--metrics-bind-address 127.0.0.1:0)',
  );
  const fromEnv = await choosePorts(
    endpointRequests([], { WEBHOOK_BIND_ADDRESS: ':0' }, { webhooks: true }),
    machine([], [40005]),
  );
  assert.deepEqual([fromEnv[2]?.from, fromEnv[2]?.set], ['free', '127.0.0.1:40005'], 'opkit chooses it and says so');
  await assert.rejects(
    choosePorts(endpointRequests(['--webhook-bind-address', ':0'], {}, { webhooks: true }), machine([], [])),
    (err: CliError) => err.code === 'Usage' && /^--webhook-bind-address :0: opkit run points/.test(err.message),
  );
});

test('metrics-secure is read exactly as the operator reads it, and a value the operator refuses is refused first', () => {
  const secure = (argv: readonly string[], env: NodeJS.ProcessEnv) =>
    endpointRequests(argv, env, { webhooks: false })[0]?.url.scheme === 'https';
  const cases: [readonly string[], NodeJS.ProcessEnv][] = [
    [[], {}],
    [['--metrics-secure=false'], {}],
    [['--metrics-secure', 'false'], {}],
    [['--metrics-secure'], { METRICS_SECURE: 'false' }],
    [[], { METRICS_SECURE: 'FALSE' }],
    [[], { METRICS_SECURE: '0' }],
    [[], { METRICS_SECURE: '1' }],
    [[], { METRICS_SECURE: '' }],
  ];
  for (const [argv, env] of cases) {
    const operator = settingsFromArgs({ name: 'x' }, argv, env).metrics?.secure !== false;
    assert.equal(secure(argv, env), operator, `${argv.join(' ')} ${JSON.stringify(env)}`);
  }
  for (const [argv, env, named] of [
    [[], { METRICS_SECURE: 'no' }, 'METRICS_SECURE: "no" is not true or false'],
    [['--metrics-secure=maybe'], {}, '--metrics-secure: "maybe" is not true or false'],
    [['--metrics-cert-name', 'x.crt'], {}, '--metrics-cert-name needs --metrics-cert-path'],
  ] as const) {
    assert.throws(() => settingsFromArgs({ name: 'x' }, argv, env), { code: 'InvalidSetting' }, 'the operator refuses');
    assert.throws(
      () => endpointRequests(argv, env, { webhooks: false }),
      (err: CliError) =>
        err.code === 'Usage' &&
        err.message.startsWith(named) &&
        err.message.endsWith('; nothing was written to the cluster'),
      named,
    );
  }
});

test('an address the operator refuses (not host:port, or the webhook server off) is refused before any write', async () => {
  for (const [argv, env, named] of [
    [['--metrics-bind-address', 'nope'], {}, '--metrics-bind-address: bind address "nope" must be host:port'],
    [[], { HEALTH_PROBE_BIND_ADDRESS: ':70000' }, 'HEALTH_PROBE_BIND_ADDRESS: bind address ":70000": port 70000'],
    [[], { WEBHOOK_BIND_ADDRESS: '0' }, 'WEBHOOK_BIND_ADDRESS: the webhook server cannot be turned off (0)'],
  ] as const) {
    await assert.rejects(
      choosePorts(endpointRequests(argv, env, { webhooks: true }), machine([], [40001])),
      (err: CliError) =>
        err.code === 'Usage' &&
        err.message.startsWith(named) &&
        err.message.endsWith('; nothing was written to the cluster'),
      named,
    );
  }
  const forHelp = await choosePorts(
    endpointRequests(['--metrics-bind-address', 'nope'], { WEBHOOK_BIND_ADDRESS: '0' }, { webhooks: true }),
    machine([], [40001]),
    { check: false },
  );
  assert.deepEqual(
    forHelp.map((e) => [e.role, e.from]),
    [
      ['metrics', 'default'],
      ['health', 'default'],
      ['webhook', 'free'],
    ],
    '--help is the operator’s to answer (it prints its help without listening): a refused address counts as none',
  );
});

test('localUrl answers for all interfaces at loopback', () => {
  assert.equal(localUrl('http', '', 1), 'http://127.0.0.1:1');
  assert.equal(localUrl('http', '0.0.0.0', 1), 'http://127.0.0.1:1');
  assert.equal(localUrl('http', '::', 1), 'http://[::1]:1');
  assert.equal(localUrl('https', 'fe80::1', 1), 'https://[fe80::1]:1');
  assert.equal(localUrl('https', 'localhost', 1), 'https://localhost:1');
});

test('freePort hands out a loopback port that can be listened on', async () => {
  const port = await freePort('127.0.0.1');
  assert.ok(port > 0);
  assert.equal(await bindProblem('127.0.0.1', port), undefined);
});
