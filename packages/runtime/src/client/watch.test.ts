import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { ConfigMaps } from './builtins.ts';
import { isApiError } from './errors.ts';
import { configMap, status, watchFrame } from './protobuf/wire.fixture.ts';
import type { Transport } from './transport.ts';
import { watchEvents } from './watch.ts';

/** A response of `type` whose body is `chunks`, exactly as split. */
function responseOf(chunks: readonly Buffer[], type = 'application/json'): IncomingMessage {
  return Object.assign(Readable.from(chunks), { headers: { 'content-type': type } }) as unknown as IncomingMessage;
}

/** A transport whose watch answers with `chunks`, exactly as split; `accepts` collects the Accept headers sent. */
function transportOf(chunks: readonly Buffer[], type?: string, accepts: string[] = []): Transport {
  return {
    stream: async (req: { accept?: string }) => {
      accepts.push(req.accept ?? '');
      return responseOf(chunks, type);
    },
  } as unknown as Transport;
}

const PROTOBUF_WATCH = 'application/vnd.kubernetes.protobuf;stream=watch';

test('multibyte UTF-8 split across network chunks is decoded whole (no U+FFFD)', async () => {
  const value = `héllo — 日本語 — 😀 ${'ü€'.repeat(2_000)}`;
  const line = `${JSON.stringify({
    type: 'ADDED',
    object: { metadata: { name: 'cm', namespace: 'ns', resourceVersion: '2' }, data: { greeting: value } },
  })}\n`;
  const bytes = Buffer.from(line, 'utf8');
  // one byte per chunk: every multibyte character straddles a chunk boundary
  const chunks = Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1));
  const events = [];
  for await (const e of watchEvents(transportOf(chunks), ConfigMaps, {
    resourceVersion: '1',
    timeoutSeconds: 30,
    inactivityTimeoutMs: 10_000,
    signal: new AbortController().signal,
  })) {
    events.push(e);
  }
  assert.equal(events.length, 1);
  const data = (events[0]?.object as { data?: Record<string, string> } | undefined)?.data;
  assert.equal(data?.greeting, value);
  assert.ok(!data?.greeting?.includes('\uFFFD'));
});

test('a silent watch fails with the Inactive code', async () => {
  const silent = new Readable({ read() {} });
  // as the real transport: the request's signal destroys the response
  const stream = async (req: { signal: AbortSignal }) => {
    req.signal.addEventListener('abort', () => silent.destroy(), { once: true });
    return Object.assign(silent, { headers: {} }) as unknown as IncomingMessage;
  };
  const transport = { stream } as unknown as Transport;
  await assert.rejects(
    (async () => {
      for await (const _ of watchEvents(transport, ConfigMaps, {
        resourceVersion: '1',
        timeoutSeconds: 30,
        inactivityTimeoutMs: 50,
        signal: new AbortController().signal,
      }));
    })(),
    (err) => isApiError(err, 'Inactive'),
  );
});

async function collect(transport: Transport, protobuf = true) {
  const events = [];
  for await (const e of watchEvents(transport, ConfigMaps, {
    resourceVersion: '1',
    timeoutSeconds: 30,
    inactivityTimeoutMs: 10_000,
    signal: new AbortController().signal,
    protobuf,
  }))
    events.push(e);
  return events;
}

test('a protobuf watch asks for protobuf, then JSON; its frames split byte by byte decode whole', async () => {
  const value = `héllo — 日本語 — 😀 ${'ü€'.repeat(2_000)}`;
  const bytes = Buffer.concat([
    watchFrame('ADDED', configMap('cm', 'ns', '2', { greeting: value })),
    watchFrame('BOOKMARK', configMap('', '', '3')),
  ]);
  const accepts: string[] = [];
  const chunks = Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1));
  const events = await collect(transportOf(chunks, PROTOBUF_WATCH, accepts));
  assert.deepEqual(accepts, ['application/vnd.kubernetes.protobuf, application/json']);
  assert.deepEqual(
    events.map((e) => e.type),
    ['ADDED', 'BOOKMARK'],
  );
  assert.deepStrictEqual(events[0]?.object, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cm', namespace: 'ns', resourceVersion: '2' },
    data: { greeting: value },
  });
  // protobuf off: JSON only
  const json = `${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'x', resourceVersion: '2' } } })}\n`;
  const off: string[] = [];
  assert.equal((await collect(transportOf([Buffer.from(json)], undefined, off), false)).length, 1);
  assert.deepEqual(off, ['application/json']);
});

test('a protobuf ERROR event throws its Status as an ApiError (410 Gone)', async () => {
  const bytes = Buffer.concat([
    watchFrame('ADDED', configMap('cm', 'ns', '2')),
    watchFrame('ERROR', status(410, 'Expired', 'too old resource version: 1 (5)')),
  ]);
  await assert.rejects(
    collect(transportOf([bytes], PROTOBUF_WATCH)),
    (err) => isApiError(err, 'Gone') && /too old resource version/.test(err.message),
  );
});

test('a protobuf watch that ends inside a frame fails with Network, never a partial event', async () => {
  const frame = watchFrame('ADDED', configMap('cm', 'ns', '2'));
  await assert.rejects(
    collect(transportOf([frame.subarray(0, frame.length - 3)], PROTOBUF_WATCH)),
    (err) => isApiError(err, 'Network') && /ended inside an event/.test(err.message),
  );
});
