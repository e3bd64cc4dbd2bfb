import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { lastFlag, operatorPort, operatorPorts, portsInUse, splitAddress } from './run-ports.ts';

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
