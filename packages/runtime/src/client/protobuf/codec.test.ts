import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isApiError } from '../errors.ts';
import {
  decodeEnvelope,
  decodeWatchEvent,
  FrameSplitter,
  hasDecoder,
  isEnvelope,
  load,
  MAX_FRAME_BYTES,
} from './codec.ts';
import { MODULES } from './kinds.ts';
import { configMap, envelope, message, status, watchFrame } from './wire.fixture.ts';

const malformed = (pattern: RegExp) => (e: unknown) =>
  isApiError(e) && e.code === 'Malformed' && pattern.test(e.message);

/** A ConfigMap as the apiserver's JSON has it (an unset creationTimestamp is left out). */
function configMapJson(name: string, namespace: string, rv: string, data?: Record<string, string>) {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace, resourceVersion: rv },
    ...(data ? { data } : {}),
  };
}

test('an envelope decodes to the object, apiVersion and kind from its Unknown', async () => {
  await load('v1', 'ConfigMap');
  const data = JSON.parse('{"greeting.txt":"héllo — 日本語 — 😀","__proto__":"own","empty":""}') as Record<
    string,
    string
  >;
  const got = decodeEnvelope(configMap('cm', 'ns', '7', data));
  assert.deepStrictEqual(got, configMapJson('cm', 'ns', '7', data));
  assert.equal(Object.getPrototypeOf(got.data), Object.prototype);
  assert.deepEqual(Object.keys(got.data as object), ['greeting.txt', '__proto__', 'empty']);
});

test('a body without the k8s\\0 magic, or cut short, is Malformed', async () => {
  await load('v1', 'ConfigMap');
  const good = configMap('cm', 'ns', '7', { a: 'b' });
  assert.equal(isEnvelope(good), true);
  assert.throws(() => decodeEnvelope(Buffer.from('{"kind":"ConfigMap"}')), malformed(/envelope/));
  assert.throws(() => decodeEnvelope(good.subarray(0, 3)), malformed(/envelope/));
  // cut inside the object: never a partial object
  assert.throws(() => decodeEnvelope(good.subarray(0, good.length - 2)), malformed(/past the end/));
});

test('a content encoding is refused; a JSON content type is parsed as JSON', async () => {
  await load('v1', 'ConfigMap');
  assert.throws(
    () => decodeEnvelope(envelope('v1', 'ConfigMap', Buffer.from([1, 2, 3]), { contentEncoding: 'gzip' })),
    malformed(/content encoding "gzip"/),
  );
  const json = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'j' } };
  const wrapped = envelope('v1', 'ConfigMap', Buffer.from(JSON.stringify(json)), { contentType: 'application/json' });
  assert.deepStrictEqual(decodeEnvelope(wrapped), json);
  assert.throws(
    () => decodeEnvelope(envelope('v1', 'ConfigMap', Buffer.from('x'), { contentType: 'application/yaml' })),
    malformed(/application\/yaml/),
  );
});

test('a kind without a decoder, or whose decoders are not loaded, is Malformed and names it', () => {
  assert.equal(hasDecoder('app.example.com/v1alpha1', 'AppService'), false);
  assert.throws(
    () => decodeEnvelope(envelope('app.example.com/v1alpha1', 'AppService', Buffer.alloc(0))),
    malformed(/no decoder for AppService of app\.example\.com\/v1alpha1/),
  );
  assert.equal(hasDecoder('coordination.k8s.io/v1', 'Lease'), true);
  assert.throws(
    () => decodeEnvelope(envelope('coordination.k8s.io/v1', 'Lease', Buffer.alloc(0))),
    malformed(/decoders of coordination\.k8s\.io\/v1 are not loaded/),
  );
});

test('a kind whose answer fails to decode is read as JSON from then on (its list too)', async () => {
  await load('v1', 'Secret');
  assert.equal(hasDecoder('v1', 'Secret'), true);
  const broken = envelope('v1', 'SecretList', message([[2, [[1, [[1, 'x']]]]]]).subarray(0, 6));
  assert.throws(() => decodeEnvelope(broken), malformed(/./));
  assert.equal(hasDecoder('v1', 'SecretList'), false);
  assert.equal(hasDecoder('v1', 'Secret'), false);
});

test('a field mask skips what it drops, keeps what it names, and never adds a field', async () => {
  await load('v1', 'ConfigMap');
  const body = configMap('cm', 'ns', '7', { a: 'b' });
  const onlyMeta = { rest: false, fields: new Map([['metadata', true]]) };
  assert.deepStrictEqual(decodeEnvelope(body, onlyMeta), {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cm', namespace: 'ns', resourceVersion: '7' },
  });
  const noNamespace = {
    rest: true,
    fields: new Map([['metadata', { rest: true, fields: new Map([['namespace', false]]) }]]),
  };
  assert.deepStrictEqual(decodeEnvelope(body, noNamespace), {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cm', resourceVersion: '7' },
    data: { a: 'b' },
  });
});

test('a protobuf Status decodes as the JSON Status', async () => {
  await load('v1', 'ConfigMap');
  assert.deepStrictEqual(decodeEnvelope(status(410, 'Expired', 'too old resource version: 1 (5)')), {
    apiVersion: 'v1',
    kind: 'Status',
    metadata: {},
    status: 'Failure',
    message: 'too old resource version: 1 (5)',
    reason: 'Expired',
    code: 410,
  });
});

test("a watch's ERROR event keeps its Status whole under the cache's field mask", async () => {
  await load('v1', 'Pod');
  // keepFields('status.phase'): a Pod's `status` is a mask, and `code`/`reason` are not named
  const podMask = {
    rest: false,
    fields: new Map<string, boolean | { rest: boolean; fields: Map<string, boolean> }>([
      ['metadata', true],
      ['status', { rest: false, fields: new Map([['phase', true]]) }],
    ]),
  };
  const event = decodeWatchEvent(
    watchFrame('ERROR', status(410, 'Expired', 'too old resource version: 1 (5)')).subarray(4),
    podMask,
  );
  assert.equal(event.type, 'ERROR');
  assert.equal(event.object.code, 410);
  assert.equal(event.object.reason, 'Expired');
  assert.equal(event.object.status, 'Failure');
});

test('watch frames split anywhere across chunks come out whole, each event once', async () => {
  await load('v1', 'ConfigMap');
  const stream = Buffer.concat([
    watchFrame('ADDED', configMap('a', 'ns', '2', { k: 'ü€'.repeat(3000) })),
    watchFrame('MODIFIED', configMap('a', 'ns', '3')),
    watchFrame('BOOKMARK', configMap('', '', '4')),
  ]);
  for (const size of [1, 3, 7, 4096, stream.length]) {
    const splitter = new FrameSplitter();
    const events = [];
    for (let at = 0; at < stream.length; at += size)
      for (const frame of splitter.push(stream.subarray(at, at + size))) events.push(decodeWatchEvent(frame));
    assert.equal(splitter.pendingBytes, 0);
    assert.deepEqual(
      events.map((e) => [e.type, (e.object.metadata as { resourceVersion: string }).resourceVersion]),
      [
        ['ADDED', '2'],
        ['MODIFIED', '3'],
        ['BOOKMARK', '4'],
      ],
      `chunks of ${size}`,
    );
    assert.equal((events[0]?.object.data as { k: string } | undefined)?.k, 'ü€'.repeat(3000));
  }
  const splitter = new FrameSplitter();
  assert.deepEqual(splitter.push(stream.subarray(0, 10)), []);
  assert.equal(splitter.pendingBytes, 10);
});

test('a field the pinned types do not have is Malformed, never dropped: the kind is read as JSON from then on', async () => {
  await load('v1', 'Namespace');
  assert.equal(hasDecoder('v1', 'Namespace'), true);
  const newer = envelope(
    'v1',
    'Namespace',
    message([
      [1, [[1, 'ns']]],
      [99, 'a field of a newer apiserver'],
    ]),
  );
  assert.throws(() => decodeEnvelope(newer), malformed(/field 99 is not in the pinned Kubernetes types/));
  assert.equal(hasDecoder('v1', 'Namespace'), false);
});

test('an envelope this client cannot read marks its kind JSON; broken JSON inside one is Malformed', async () => {
  await load('v1', 'Service', 'Endpoints');
  const encoded = envelope('v1', 'Service', Buffer.from('x'), { contentEncoding: 'gzip' });
  assert.throws(() => decodeEnvelope(encoded), malformed(/content encoding "gzip"/));
  assert.equal(hasDecoder('v1', 'Service'), false);
  const json = envelope('v1', 'Endpoints', Buffer.from('{"kind":'), { contentType: 'application/json' });
  assert.throws(() => decodeEnvelope(json), malformed(/Endpoints of v1 could not be decoded: SyntaxError/));
  assert.equal(hasDecoder('v1', 'Endpoints'), false);
});

test('a decoder module that fails to load: load resolves, and its kinds are read as JSON', async () => {
  const original = MODULES['node-v1alpha1'];
  const modules = MODULES as Record<string, () => Promise<object>>;
  modules['node-v1alpha1'] = () => Promise.reject(new Error('ENOENT: node-v1alpha1.js'));
  try {
    assert.equal(hasDecoder('node.k8s.io/v1alpha1', 'RuntimeClass'), true);
    await load('node.k8s.io/v1alpha1', 'RuntimeClass');
    assert.equal(hasDecoder('node.k8s.io/v1alpha1', 'RuntimeClass'), false);
    assert.equal(hasDecoder('node.k8s.io/v1alpha1', 'RuntimeClassList'), false);
  } finally {
    if (original) modules['node-v1alpha1'] = original;
  }
});

test('a frame over many chunks is read whole, with the frames after it; an over-long length is Malformed', async () => {
  await load('v1', 'ConfigMap');
  const big = watchFrame('ADDED', configMap('big', 'ns', '2', { k: 'ü'.repeat(600_000) }));
  const stream = Buffer.concat([big, watchFrame('MODIFIED', configMap('a', 'ns', '3'))]);
  const splitter = new FrameSplitter();
  const frames: Uint8Array[] = [];
  for (let at = 0; at < stream.length; at += 16_384) frames.push(...splitter.push(stream.subarray(at, at + 16_384)));
  assert.equal(splitter.pendingBytes, 0);
  assert.deepEqual(
    frames.map((f) => decodeWatchEvent(f).type),
    ['ADDED', 'MODIFIED'],
  );
  assert.equal((decodeWatchEvent(frames[0] as Uint8Array).object.data as { k: string }).k.length, 600_000);
  const corrupt = Buffer.alloc(8);
  corrupt.writeUInt32BE(MAX_FRAME_BYTES + 1);
  assert.throws(() => new FrameSplitter().push(corrupt), malformed(/over the 16777216-byte limit/));
  const split = new FrameSplitter();
  assert.deepEqual(split.push(corrupt.subarray(0, 2)), []);
  assert.throws(() => split.push(corrupt.subarray(2)), malformed(/over the/));
});

test('a watch event without an object is Malformed', () => {
  const frame = message([[1, 'ADDED']]);
  assert.throws(() => decodeWatchEvent(frame), malformed(/ADDED/));
});
