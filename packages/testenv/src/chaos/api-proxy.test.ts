import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, request, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLoopbackServingPki } from '../certs.ts';
import { ApiFaultProxy, type ApiFaultProxyOptions } from './api-proxy.ts';
import { coalesced } from './watch-gate.ts';

const ev = (type: string, name: string, rv: number, uid = `u-${name}`) =>
  JSON.stringify({ type, object: { kind: 'Pod', metadata: { name, namespace: 'ns', uid, resourceVersion: `${rv}` } } });
const bookmark = (rv: number) =>
  JSON.stringify({ type: 'BOOKMARK', object: { kind: 'Pod', metadata: { resourceVersion: `${rv}` } } });

test('coalesced: per object its last state, in the order of its last event; added-then-deleted is never seen', () => {
  const held = [
    ev('ADDED', 'a', 1),
    ev('MODIFIED', 'c', 2),
    bookmark(3),
    ev('ADDED', 'b', 4),
    ev('MODIFIED', 'a', 5),
    ev('DELETED', 'b', 6),
    ev('DELETED', 'd', 7),
    '{"type":"ERROR","object":{"kind":"Status","code":410}}',
    bookmark(8),
  ];
  const out = coalesced(held).map((l) => {
    const e = JSON.parse(l) as { type: string; object: { metadata?: { name?: string; resourceVersion?: string } } };
    return `${e.type} ${e.object.metadata?.name ?? ''}@${e.object.metadata?.resourceVersion ?? ''}`;
  });
  assert.deepEqual(out, ['MODIFIED c@2', 'ADDED a@5', 'DELETED d@7', 'ERROR @', 'BOOKMARK @8']);
  assert.deepEqual(coalesced([]), []);
});

/** A stand-in for the apiserver: records what reached it; a watch streams what the test pushes. */
let upstream: Server;
let upstreamUrl = '';
let dir = '';
let pki: Awaited<ReturnType<typeof createLoopbackServingPki>>;
const reached: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] = [];
let watchResponse: ServerResponse | undefined;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'opkit-api-proxy-'));
  pki = await createLoopbackServingPki(dir);
  upstream = createServer({ cert: pki.serving.certPem, key: pki.serving.keyPem }, (req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (c: string) => (body += c));
    req.on('end', () => {
      reached.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if ((req.url ?? '').includes('watch=true')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
        watchResponse = res;
        return;
      }
      const forbidden = /\/namespaces\/(denied|quota)(-pb)?$/.exec(req.url ?? '');
      if (forbidden) {
        const message =
          forbidden[1] === 'denied'
            ? 'namespaces "denied" is forbidden: User "system:serviceaccount:op:op" cannot patch resource "namespaces" in API group "" in the namespace "denied"'
            : 'namespaces "quota" is forbidden: exceeded quota: compute';
        res.writeHead(403, { 'content-type': 'application/json' });
        const json = JSON.stringify({ kind: 'Status', status: 'Failure', message, reason: 'Forbidden', code: 403 });
        // protobuf's Status: its strings as they are, between length-prefixed fields
        const pb = Buffer.concat([
          Buffer.from([0x6b, 0x38, 0x73, 0x00, 0x1a, 0x8f, 0x01]),
          Buffer.from(message),
          Buffer.from([0x22, 0x09]),
          Buffer.from('Forbidden'),
        ]);
        res.end(forbidden[2] ? pb : json);
        return;
      }
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json', 'x-upstream': 'yes' });
      res.end(JSON.stringify({ echoed: body }));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const address = upstream.address();
  upstreamUrl = `https://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});

after(async () => {
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

async function withProxy(o: Partial<ApiFaultProxyOptions>, body: (proxy: ApiFaultProxy) => Promise<void>) {
  const proxy = await ApiFaultProxy.start({
    target: { url: upstreamUrl, caPem: pki.ca.certPem },
    serving: { caPem: pki.ca.certPem, certPem: pki.serving.certPem, keyPem: pki.serving.keyPem },
    ...o,
  });
  try {
    await body(proxy);
  } finally {
    await proxy.close();
  }
}

/** A request through the proxy, trusting its CA: status, headers and body. */
function call(proxy: ApiFaultProxy, method: string, path: string, body?: string) {
  return new Promise<{ status: number; headers: IncomingMessage['headers']; body: string }>((resolve, reject) => {
    const req = request(
      `${proxy.url}${path}`,
      {
        method,
        ca: proxy.caPem,
        headers: { authorization: 'Bearer t0ken', accept: 'application/vnd.kubernetes.protobuf, application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

test("the authorizer's refusals are reported, in JSON and protobuf; a 403 of a quota is not; the client gets the body", async () => {
  const denied: string[] = [];
  await withProxy(
    { onDenied: (info, message) => denied.push(`${info.verb} ${info.name}: ${message}`) },
    async (proxy) => {
      for (const path of ['denied', 'denied-pb', 'quota', 'quota-pb']) {
        const r = await call(proxy, 'PATCH', `/api/v1/namespaces/${path}`, '{}');
        assert.equal(r.status, 403);
        assert.match(r.body, /is forbidden/);
      }
    },
  );
  const message =
    'namespaces "denied" is forbidden: User "system:serviceaccount:op:op" cannot patch resource "namespaces" in API group "" in the namespace "denied"';
  assert.deepEqual(denied, [`patch denied: ${message}`, `patch denied-pb: ${message}`]);
});

test('a passed request reaches the apiserver unchanged (method, path, token, body) and its answer comes back', async () => {
  await withProxy({}, async (proxy) => {
    reached.length = 0;
    const r = await call(proxy, 'POST', '/api/v1/namespaces/ns/configmaps?fieldManager=op', '{"data":{"k":"ü"}}');
    assert.equal(r.status, 201);
    assert.equal(r.headers['x-upstream'], 'yes');
    assert.deepEqual(JSON.parse(r.body), { echoed: '{"data":{"k":"ü"}}' });
    assert.equal(reached[0]?.url, '/api/v1/namespaces/ns/configmaps?fieldManager=op');
    assert.equal(reached[0]?.headers.authorization, 'Bearer t0ken');
    assert.match(reached[0]?.headers.accept ?? '', /protobuf/, 'only a watch is asked for JSON');
    assert.equal(proxy.stats.applied, 1);
    assert.deepEqual(proxy.stats.requests, { create: 1 });
  });
});

test('an answer of its own (409, 429 with Retry-After) is a Status, and the apiserver never sees the request', async () => {
  await withProxy(
    {
      answer: (info) =>
        info.verb === 'update'
          ? { code: 409 }
          : info.verb === 'patch'
            ? { code: 429, retryAfterSeconds: 2 }
            : undefined,
    },
    async (proxy) => {
      reached.length = 0;
      const conflict = await call(proxy, 'PUT', '/api/v1/namespaces/ns/configmaps/cm', '{}');
      assert.equal(conflict.status, 409);
      assert.deepEqual(
        (({ kind, reason, code, details }) => ({ kind, reason, code, details }))(JSON.parse(conflict.body)),
        { kind: 'Status', reason: 'Conflict', code: 409, details: { name: 'cm', kind: 'configmaps' } },
      );
      const busy = await call(proxy, 'PATCH', '/api/v1/namespaces/ns/configmaps/cm', '{}');
      assert.equal(busy.status, 429);
      assert.equal(busy.headers['retry-after'], '2');
      assert.equal(reached.length, 0);
      assert.equal((await call(proxy, 'GET', '/api/v1/namespaces/ns/configmaps/cm')).status, 200);
      assert.deepEqual(proxy.stats.answered, { 409: 1, 429: 1 });
      assert.equal(proxy.stats.applied, 0, 'an answered write was not applied');
    },
  );
});

test('onApplied runs after the apiserver applied a write and before the client has the answer', async () => {
  const order: string[] = [];
  await withProxy(
    {
      onApplied: async (info) => {
        order.push(`applied ${info.verb} ${info.name ?? ''} (reached: ${reached.length})`);
        await sleep(150);
        order.push('onApplied returns');
      },
    },
    async (proxy) => {
      reached.length = 0;
      await call(proxy, 'DELETE', '/api/v1/namespaces/ns/configmaps/cm');
      order.push('client has the answer');
      await call(proxy, 'GET', '/api/v1/namespaces/ns/configmaps/cm');
    },
  );
  assert.deepEqual(order, ['applied delete cm (reached: 1)', 'onApplied returns', 'client has the answer']);
});

test('held watches deliver nothing until released, then every event in order (or coalesced), and end after', async () => {
  await withProxy({}, async (proxy) => {
    const lines: string[] = [];
    let ended = false;
    const req = request(
      `${proxy.url}/api/v1/namespaces/ns/pods?watch=true`,
      { ca: proxy.caPem, headers: { accept: 'application/vnd.kubernetes.protobuf;stream=watch' } },
      (res) => {
        let partial = '';
        res.setEncoding('utf8').on('data', (c: string) => {
          const parts = (partial + c).split('\n');
          partial = parts.pop() ?? '';
          lines.push(...parts);
        });
        res.on('end', () => (ended = true));
      },
    );
    req.end();
    while (watchResponse === undefined) await sleep(10);
    assert.equal(reached.at(-1)?.headers.accept, 'application/json', 'a watch is asked for JSON');
    const server = watchResponse;
    server.write(`${ev('ADDED', 'a', 1)}\n`);
    while (lines.length < 1) await sleep(10);
    proxy.holdWatches();
    // split across chunks: the gate passes whole lines only
    const held = `${ev('MODIFIED', 'a', 2)}\n${ev('ADDED', 'b', 3)}\n${ev('DELETED', 'b', 4)}\n`;
    server.write(held.slice(0, 30));
    server.write(held.slice(30));
    server.end();
    await sleep(200);
    assert.equal(lines.length, 1, 'nothing while held');
    assert.equal(ended, false, 'a watch that ended while held stays open until its events are out');
    proxy.releaseWatches({ coalesce: true });
    while (!ended) await sleep(10);
    assert.deepEqual(
      lines.map((l) => {
        const e = JSON.parse(l) as { type: string; object: { metadata: { name: string; resourceVersion: string } } };
        return `${e.type} ${e.object.metadata.name}@${e.object.metadata.resourceVersion}`;
      }),
      ['ADDED a@1', 'MODIFIED a@2'],
    );
    assert.equal(proxy.stats.coalescedAway, 2);
    watchResponse = undefined;
  });
});

test('holdWatches(which) holds only the watches it picks; the others flow', async () => {
  await withProxy({}, async (proxy) => {
    const lines: string[] = [];
    proxy.holdWatches((info) => info.resource === 'configmaps');
    const req = request(
      `${proxy.url}/api/v1/namespaces/ns/pods?watch=true`,
      { ca: proxy.caPem, headers: { accept: 'application/json' } },
      (res) => res.setEncoding('utf8').on('data', (c: string) => lines.push(...c.split('\n').filter(Boolean))),
    );
    req.end();
    while (watchResponse === undefined) await sleep(10);
    const server = watchResponse;
    server.write(`${ev('ADDED', 'p', 1)}\n`);
    while (lines.length < 1) await sleep(10);
    assert.match(lines[0] ?? '', /"name":"p"/, 'a pods watch flows while configmaps are held');
    server.end();
    proxy.releaseWatches();
    watchResponse = undefined;
  });
});

test('resetConnections resets every client mid-request and mid-watch, ends the upstream ones, and serves new ones', async () => {
  let reset = () => {};
  await withProxy({ onApplied: () => reset() }, async (proxy) => {
    reset = () => proxy.resetConnections();
    const watchError = new Promise<string>((resolve) => {
      const req = request(`${proxy.url}/api/v1/namespaces/ns/pods?watch=true`, { ca: proxy.caPem }, (res) => {
        res.on('data', () => {});
        res.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
        res.on('end', () => resolve('ended'));
      });
      req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      req.end();
    });
    while (watchResponse === undefined) await sleep(10);
    const upstreamWatch = watchResponse;
    const upstreamClosed = new Promise<void>((resolve) => upstreamWatch.once('close', () => resolve()));
    // the write is applied, then every connection is reset before its answer reaches the client
    await assert.rejects(call(proxy, 'POST', '/api/v1/namespaces/ns/configmaps', '{}'), { code: 'ECONNRESET' });
    assert.equal(await watchError, 'ECONNRESET', 'the watch sees ECONNRESET');
    await upstreamClosed;
    reset = () => {};
    assert.equal((await call(proxy, 'GET', '/api/v1/namespaces/ns/configmaps/cm')).status, 200, 'new ones are served');
    watchResponse = undefined;
  });
});
