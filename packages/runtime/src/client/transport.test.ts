/**
 * The transport on the wire, against scripted HTTP servers on loopback: deadlines that cover the body, retries,
 * certificate rotation with requests in flight, impersonation headers, a client bound to a signal, and a CONNECT proxy.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { after, test } from 'node:test';
import { UsageError } from '../errors.ts';
import type { Authenticator } from './auth.ts';
import { ConfigMaps, Secrets } from './builtins.ts';
import { Client } from './client.ts';
import { isApiError } from './errors.ts';
import type { ConnectionConfig } from './kubeconfig.ts';
import { envelope, message } from './protobuf/wire.fixture.ts';
import { Transport } from './transport.ts';

type Handler = (req: IncomingMessage, res: ServerResponse, nth: number) => void;

const servers: Server[] = [];
after(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

async function serve(handler: Handler): Promise<{ url: string; requests: IncomingMessage[]; server: Server }> {
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    handler(req, res, requests.length);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, server };
}

const noAuth: Authenticator = { credentials: async () => ({ headers: {} }), invalidate() {} };

function config(server: string, extra: Partial<ConnectionConfig> = {}): ConnectionConfig {
  return { server, auth: noAuth, namespace: 'default', contextName: 'test', ...extra };
}

function transport(server: string, extra: Partial<ConnectionConfig> = {}, timeoutMs = 60_000): Transport {
  return new Transport({ config: config(server, extra), userAgent: 'test', timeoutMs });
}

const json = (res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(code, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

test('the deadline covers the response body: a body that stalls after the headers fails with Timeout', async () => {
  const { url } = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"items":[');
    // …and nothing more
  });
  const t = transport(url, {}, 300);
  const started = performance.now();
  await assert.rejects(t.request({ method: 'GET', path: '/api/v1/configmaps' }), (err) => isApiError(err, 'Timeout'));
  assert.ok(performance.now() - started < 2_000, 'cut off near the deadline');
  t.close();
});

test('500 and 504 with Retry-After are retried; a 500 without it is not', async () => {
  const { url, requests } = await serve((_req, res, nth) => {
    if (nth === 1)
      return json(res, 500, { kind: 'Status', code: 500, reason: 'InternalError' }, { 'retry-after': '0' });
    if (nth === 2) return json(res, 504, { kind: 'Status', code: 504, reason: 'Timeout' }, { 'retry-after': '0' });
    if (nth === 3) return json(res, 200, { ok: true });
    return json(res, 500, { kind: 'Status', code: 500, reason: 'InternalError', message: 'boom' });
  });
  const t = transport(url);
  assert.deepEqual(await t.request({ method: 'GET', path: '/x' }), { ok: true });
  assert.equal(requests.length, 3);
  await assert.rejects(t.request({ method: 'GET', path: '/x' }), (err) => isApiError(err, 'InternalError'));
  assert.equal(requests.length, 4, 'no Retry-After: not retried');
  t.close();
});

test('a GET whose connection is reset is retried; a POST is never replayed', async () => {
  const { url, requests } = await serve((req, res, nth) => {
    if (nth === 1 || req.method === 'POST') req.socket.destroy();
    else json(res, 200, { ok: nth });
  });
  const t = transport(url);
  assert.deepEqual(await t.request({ method: 'GET', path: '/x' }), { ok: 2 });
  const before = requests.length;
  await assert.rejects(t.request({ method: 'POST', path: '/x', body: {} }), (err) => isApiError(err, 'Network'));
  assert.equal(requests.length, before + 1, 'one POST only');
  t.close();
});

test("a write's protobuf answer that cannot be decoded is not sent again: the object is read in JSON", async () => {
  // a Secret with a field the pinned types lack (number 99): an apiserver newer than this client
  const newer = envelope(
    'v1',
    'Secret',
    message([
      [
        1,
        [
          [1, 's'],
          [3, 'default'],
          [6, '7'],
        ],
      ],
      [99, 'new'],
    ]),
  );
  const stored = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's', namespace: 'default', resourceVersion: '7' },
  };
  const { url, requests } = await serve((req, res) => {
    if (req.method === 'POST') {
      res.writeHead(201, { 'content-type': 'application/vnd.kubernetes.protobuf' });
      res.end(newer);
    } else json(res, 200, stored);
  });
  const client = new Client(config(url));
  const created = await client.create(Secrets, { metadata: { name: 's', namespace: 'default' }, type: 'Opaque' });
  assert.deepEqual(created, stored);
  assert.deepEqual(
    requests.map((r) => `${r.method} ${r.url} ${r.headers.accept}`),
    [
      'POST /api/v1/namespaces/default/secrets application/vnd.kubernetes.protobuf, application/json',
      'GET /api/v1/namespaces/default/secrets/s application/json',
    ],
    'one POST, then a GET in JSON',
  );
  await client.create(Secrets, { metadata: { name: 't', namespace: 'default' } }).catch(() => {});
  assert.equal(requests.at(-1)?.headers.accept, 'application/json', 'the kind is written in JSON from then on');
  client.close();
});

test('a rotated client certificate lets requests in flight finish on the old connections', async () => {
  let cert = 'cert-1';
  const auth: Authenticator = { credentials: async () => ({ headers: {}, cert }), invalidate() {} };
  const { url } = await serve((_req, res, nth) => {
    if (nth === 1) setTimeout(() => json(res, 200, { slow: true }), 300);
    else json(res, 200, { fast: true });
  });
  const t = transport(url, { auth });
  const slow = t.request({ method: 'GET', path: '/slow' });
  await new Promise((r) => setTimeout(r, 50));
  cert = 'cert-2';
  assert.deepEqual(await t.request({ method: 'GET', path: '/fast' }), { fast: true });
  assert.deepEqual(await slow, { slow: true }, 'the request under way was not cut off');
  t.close();
});

test("fieldValidation: the client's default on every POST, PUT and PATCH that names none; warnings reach onWarning", async () => {
  const { url, requests } = await serve((_req, res) =>
    json(res, 200, {}, { warning: Buffer.from('299 - "unknown field \\"spec.färbe\\""', 'utf8').toString('latin1') }),
  );
  const heard: [string, string][] = [];
  const client = new Client(config(url), {
    fieldValidation: 'Strict',
    onWarning: (text, request) => heard.push([text, request]),
    protobuf: false,
  });
  const cm = { metadata: { name: 'c', namespace: 'ns' } };
  await client.create(ConfigMaps, cm);
  await client.update(ConfigMaps, cm, { fieldValidation: 'Ignore' });
  await client.patch(ConfigMaps, cm.metadata, { data: { a: 'b' } });
  await client.apply(ConfigMaps, cm, { fieldManager: 'me' });
  await client.get(ConfigMaps, cm.metadata);
  await client.delete(ConfigMaps, cm.metadata);
  const asked = requests.map((r) => `${r.method} ${new URL(r.url ?? '', url).searchParams.get('fieldValidation')}`);
  assert.deepEqual(asked, ['POST Strict', 'PUT Ignore', 'PATCH Strict', 'PATCH Strict', 'GET null', 'DELETE null']);
  assert.equal(new URL(requests[3]?.url ?? '', url).searchParams.get('force'), null, 'no force unless asked');
  assert.equal(heard.length, 6, 'one warning per answer, every verb');
  assert.deepEqual(heard[0], ['unknown field "spec.färbe"', 'POST /api/v1/namespaces/ns/configmaps']);
  client.close();
});

test('impersonation is sent as Impersonate-* headers on every request', async () => {
  const { url, requests } = await serve((_req, res) => json(res, 200, {}));
  const t = transport(url, {
    impersonate: { user: 'jane', uid: '42', groups: ['devs', 'ops'], extra: { 'acme.io/scopes': ['view', 'édit'] } },
  });
  await t.request({ method: 'GET', path: '/x' });
  const h = requests[0]?.headersDistinct ?? {};
  assert.deepEqual(h['impersonate-user'], ['jane']);
  assert.deepEqual(h['impersonate-uid'], ['42']);
  assert.deepEqual(h['impersonate-group'], ['devs', 'ops']);
  // the values go as UTF-8 bytes, as kubectl sends them (a Node server reads header bytes as Latin-1)
  const utf8 = (v: string[] | undefined) => v?.map((x) => Buffer.from(x, 'latin1').toString('utf8'));
  assert.deepEqual(utf8(h['impersonate-extra-acme.io%2fscopes']), ['view', 'édit']);
  t.close();
});

test('a client made withSignal aborts its requests when the signal does, without passing it per call', async () => {
  const { url } = await serve(() => {
    // never answers
  });
  const client = new Client(config(url));
  const ctl = new AbortController();
  const bound = client.withSignal(ctl.signal);
  const pending = bound.get(ConfigMaps, { namespace: 'default', name: 'x' });
  setTimeout(() => ctl.abort(), 50);
  await assert.rejects(pending, (err) => isApiError(err, 'Aborted'));
  client.close();
});

test('a guarded client asks its guard after every wait, right before each attempt goes out; a refusal sends nothing', async () => {
  const { url, requests } = await serve((_req, res, nth) =>
    nth === 1 ? json(res, 429, {}, { 'retry-after': '1' }) : json(res, 200, { metadata: { name: 'x' } }),
  );
  const client = new Client(config(url), { qps: 1, burst: 1 });
  let asked = 0;
  let allow = true;
  const guarded = client.withSignal(new AbortController().signal).withGuard(() => {
    asked += 1;
    if (!allow) throw new DOMException('the Lease is not fresh', 'AbortError');
  });
  await guarded.get(ConfigMaps, { namespace: 'default', name: 'x' });
  assert.equal(requests.length, 2, 'a 429, then the retry');
  assert.equal(asked, 4, 'asked twice for each attempt: after the waits, and with its connection ready');
  // the guard turns while the request waits for a token of the QPS limit: it is refused after the wait, unsent
  const waiting = guarded.get(ConfigMaps, { namespace: 'default', name: 'x' });
  allow = false;
  await assert.rejects(
    waiting,
    (err) => isApiError(err, 'Aborted') && err.cause instanceof DOMException && /not fresh/.test(err.cause.message),
  );
  assert.equal(requests.length, 2, 'nothing was sent');
  await client.get(ConfigMaps, { namespace: 'default', name: 'x' }); // the unguarded client is not affected
  assert.equal(requests.length, 3);
  client.close();
});

test('a guarded request is asked again once its connection is ready: a refusal then sends none of it', async () => {
  const { url, requests, server } = await serve((_req, res) => json(res, 200, {}));
  let bytes = 0;
  server.on('connection', (socket) => socket.on('data', (d: Buffer) => (bytes += d.length)));
  const client = new Client(config(url)); // no connection yet: the request waits for a new one
  let asked = 0;
  const guarded = client.withGuard(() => {
    asked += 1;
    // the first check passes; by the time the connection is ready, the Lease is gone (a pause in between)
    if (asked > 1) throw new DOMException('the Lease is not fresh', 'AbortError');
  });
  await assert.rejects(guarded.create(ConfigMaps, { metadata: { name: 'x', namespace: 'default' } }), (err) =>
    isApiError(err, 'Aborted'),
  );
  assert.equal(asked, 2, 'asked after the waits, and again with the connection ready');
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(requests.length, 0, 'no request reached the server');
  assert.equal(bytes, 0, 'not a byte of it was written');
  client.close();
});

test('a proxy-url tunnels the requests through the proxy (CONNECT)', async () => {
  const { url } = await serve((_req, res) => json(res, 200, { through: 'proxy' }));
  const connects: string[] = [];
  const proxy = createServer();
  servers.push(proxy);
  proxy.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    connects.push(req.url ?? '');
    const [host, port] = (req.url ?? '').split(':');
    const upstream = connect(Number(port), host ?? '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  const t = transport(url, { proxyUrl });
  assert.deepEqual(await t.request({ method: 'GET', path: '/x' }), { through: 'proxy' });
  assert.deepEqual(connects, [new URL(url).host]);
  t.close();
});

test('a watch retried after a 401 (credentials refreshed) still ends when its signal aborts', async () => {
  let invalidated = 0;
  const auth: Authenticator = {
    credentials: async () => ({ headers: {} }),
    invalidate() {
      invalidated += 1;
    },
  };
  const { url } = await serve((_req, res, nth) => {
    if (nth === 1) return json(res, 401, { kind: 'Status', code: 401, reason: 'Unauthorized' });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.flushHeaders(); // an open watch that says nothing
  });
  const t = transport(url, { auth });
  const ctl = new AbortController();
  const res = await t.stream({ path: '/api/v1/configmaps', query: { watch: 1 }, signal: ctl.signal });
  assert.equal(invalidated, 1);
  const closed = new Promise((resolve) => res.once('close', resolve));
  ctl.abort();
  await closed; // the retried request is still tied to the signal
  t.close();
});

test('the QPS limit paces requests after the burst, and an abort cuts the wait for a token short', async () => {
  const { url } = await serve((_req, res) => json(res, 200, {}));
  const limited = new Transport({ config: config(url), userAgent: 'test', qps: 20, burst: 2 });
  const started = performance.now();
  for (let i = 0; i < 4; i++) await limited.request({ method: 'GET', path: '/api' });
  assert.ok(performance.now() - started >= 90, '4 requests at 20 qps with burst 2 take >= 100 ms');
  const controller = new AbortController();
  const waiting = limited.request({ method: 'GET', path: '/api', signal: controller.signal });
  controller.abort();
  await assert.rejects(waiting, (err) => isApiError(err, 'Aborted'));
  limited.close();
  assert.throws(
    () => new Client(config(url), { qps: -1 }),
    (err) => err instanceof UsageError && err.code === 'InvalidArgument',
  );
  assert.throws(() => new Client(config(url), { qps: 5, burst: 0 }), UsageError);
});

test('a watch without its timeouts is refused at once, naming the field (from JavaScript, where types do not check)', () => {
  const client = new Client(config('http://127.0.0.1:1'));
  const signal = new AbortController().signal;
  const refused = (field: string) => (err: unknown) =>
    err instanceof UsageError && err.code === 'InvalidArgument' && err.message.includes(field);
  const missing = { resourceVersion: '1', signal } as unknown as Parameters<Client['watch']>[1];
  assert.throws(() => client.watch(ConfigMaps, missing), refused('timeoutSeconds'));
  assert.throws(
    () => client.watch(ConfigMaps, { ...missing, timeoutSeconds: 30 }),
    refused('inactivityTimeoutMs must be a number of milliseconds > 0, got undefined'),
  );
  assert.throws(
    () => client.watch(ConfigMaps, { ...missing, timeoutSeconds: -1, inactivityTimeoutMs: 1000 }),
    refused('timeoutSeconds'),
  );
  client.close();
});
