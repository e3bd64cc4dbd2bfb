import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import type { CliError } from '../errors.ts';
import {
  bindProblem,
  choosePorts,
  describeEndpoints,
  endpointRequests,
  freePort,
  lastFlag,
  localUrl,
  operatorPort,
  operatorPorts,
  portsInUse,
  splitAddress,
} from './run-ports.ts';

test('lastFlag reads both forms, keeps the last, and stops at --', () => {
  assert.equal(lastFlag(['--a', '1', '--a=2'], 'a'), '2');
  assert.equal(lastFlag(['--a=2', '--a', '3'], 'a'), '3');
  assert.equal(lastFlag(['--ab', '1'], 'a'), undefined);
  assert.equal(lastFlag(['--', '--a', '1'], 'a'), undefined);
  assert.equal(lastFlag(['--a', '--b'], 'a'), undefined, 'a flag is no value');
});

test('splitAddress: host:port, :port, [v6]:port', () => {
  assert.deepEqual(splitAddress('127.0.0.1:8081'), { host: '127.0.0.1', port: 8081 });
  assert.deepEqual(splitAddress(':8443'), { host: '', port: 8443 });
  assert.deepEqual(splitAddress('[::1]:9443'), { host: '::1', port: 9443 });
  assert.equal(splitAddress('nope'), undefined);
  assert.equal(splitAddress(':70000'), undefined);
});

test('the operator’s ports as its settings read them: flag, then environment, then the default; 0 is off', () => {
  const defaults = operatorPorts([], {});
  assert.deepEqual(
    defaults.map((p) => [p.role, p.flag, p.address, p.from]),
    [
      ['metrics', '--metrics-bind-address', ':8443', 'default'],
      ['health', '--health-probe-bind-address', ':8081', 'default'],
    ],
  );
  assert.equal(operatorPorts(['--metrics-secure=false'], {})[0]?.address, ':8080');
  assert.equal(operatorPorts(['--metrics-secure', 'false'], {})[0]?.address, ':8080');
  assert.equal(operatorPorts([], { METRICS_SECURE: 'false' })[0]?.address, ':8080');
  assert.equal(operatorPorts(['--metrics-secure'], { METRICS_SECURE: 'false' })[0]?.address, ':8443');
  const fromEnv = operatorPorts([], { HEALTH_PROBE_BIND_ADDRESS: '127.0.0.1:9000' })[1];
  assert.deepEqual([fromEnv?.address, fromEnv?.from, fromEnv?.port], ['127.0.0.1:9000', 'environment', 9000]);
  const flagWins = operatorPorts(['--health-probe-bind-address', ':9001'], { HEALTH_PROBE_BIND_ADDRESS: ':9000' })[1];
  assert.deepEqual([flagWins?.address, flagWins?.from], [':9001', 'flag']);
  assert.deepEqual(
    operatorPorts(['--metrics-bind-address', '0', '--health-probe-bind-address=127.0.0.1:0'], {}),
    [],
    'off, and any free port, need no check',
  );
  assert.equal(operatorPort('webhook', [], {}, undefined), undefined, 'no webhook address unless one is given');
  assert.equal(operatorPort('webhook', ['--webhook-bind-address', ':9443'], {}, undefined)?.port, 9443);
});

test('portsInUse names each taken port, the flag that moves it, and that nothing was written', async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const taken = typeof address === 'object' && address ? address.port : 0;
  try {
    const ports = operatorPorts(
      ['--metrics-bind-address', `127.0.0.1:${taken}`, '--health-probe-bind-address', '0'],
      {},
    );
    const err = await portsInUse(ports);
    assert.equal(err?.code, 'PortInUse');
    assert.match(
      err?.message ?? '',
      new RegExp(`^port ${taken} \\(--metrics-bind-address 127\\.0\\.0\\.1:${taken}\\) is in use on this machine`),
    );
    assert.match(err?.message ?? '', /opkit run -- --metrics-bind-address 127\.0\.0\.1:<port>, or 0 to turn it off/);
    assert.match(err?.message ?? '', /; nothing was written to the cluster$/);
    const all = await portsInUse(
      operatorPorts(['--metrics-bind-address', `:${taken}`, '--health-probe-bind-address', '0'], {}),
    );
    assert.match(all?.message ?? '', /is in use/, 'all interfaces include the taken loopback port');
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  assert.equal(
    await portsInUse(
      operatorPorts(['--metrics-bind-address', `127.0.0.1:${taken}`, '--health-probe-bind-address', '0'], {}),
    ),
    undefined,
  );
});

/** A machine where the ports of `taken` are bound and free ports are handed out from `free`, in order. */
function machine(taken: readonly number[], free: readonly number[], reserved: readonly number[] = []) {
  const queue = [...free];
  const asked: string[] = [];
  return {
    asked,
    bindProblem: async (host: string, port: number) => {
      asked.push(`${host}:${port}`);
      return taken.includes(port) ? 'EADDRINUSE' : undefined;
    },
    freePort: async () => queue.shift() ?? 0,
    reserved: new Set(reserved),
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
  const m = machine([8443], [8081, 40002, 40003, 40004], [40002]);
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
