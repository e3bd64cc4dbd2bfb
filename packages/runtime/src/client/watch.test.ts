import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { ConfigMaps } from './builtins.ts';
import { isApiError } from './errors.ts';
import type { Transport } from './transport.ts';
import { watchEvents } from './watch.ts';

/** A transport whose watch answers with `chunks`, exactly as split. */
function transportOf(chunks: readonly Buffer[]): Transport {
  return { stream: async () => Readable.from(chunks) as unknown as IncomingMessage } as unknown as Transport;
}

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
    return silent as unknown as IncomingMessage;
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
