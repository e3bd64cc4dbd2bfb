import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Client } from '../client/client.ts';
import { ApiError } from '../client/errors.ts';
import { SecretCertificates } from './selfmanaged.ts';
import { WebhookServer } from './server.ts';

/** A client whose Secret never appears (the leader has not written it yet); counts the reads. */
function noSecret() {
  const reads = { count: 0 };
  const client = {
    async get() {
      reads.count += 1;
      throw new ApiError('NotFound', 'secrets "webhook-certs" not found', { status: 404 });
    },
  };
  return { client: client as unknown as Client, reads };
}

test('SecretCertificates.load rejects promptly (Aborted) when its signal aborts while it waits for the Secret', async () => {
  const { client, reads } = noSecret();
  const certs = new SecretCertificates({ client, namespace: 'op-system', secretName: 'webhook-certs', hosts: ['x'] });
  const stop = new AbortController();
  const t0 = performance.now();
  const loading = certs.load(stop.signal);
  setTimeout(() => stop.abort(), 50);
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    loading.then(
      () => 'loaded',
      (err: { code?: string }) => err.code,
    ),
    new Promise<string>((resolve) => {
      timer = setTimeout(resolve, 3_000, 'still waiting after 3 s');
    }),
  ]);
  clearTimeout(timer);
  assert.equal(outcome, 'Aborted');
  assert.ok(performance.now() - t0 < 1_000, `rejected after ${Math.round(performance.now() - t0)} ms`);
  assert.equal(reads.count, 1, 'no read after the abort');
  await assert.rejects(certs.load(AbortSignal.abort()), { code: 'Aborted' });
  assert.equal(reads.count, 1, 'an aborted signal: no read at all');
});

test('a webhook server stopped while it waits for its Secret returns at once, serving nothing', async () => {
  const { client } = noSecret();
  const certs = new SecretCertificates({ client, namespace: 'op-system', secretName: 'webhook-certs', hosts: ['x'] });
  const server = new WebhookServer({ bindAddress: '127.0.0.1:0', certificates: certs });
  const stop = new AbortController();
  const running = server.start(stop.signal);
  await new Promise((r) => setTimeout(r, 50));
  const t0 = performance.now();
  stop.abort();
  await running;
  assert.ok(performance.now() - t0 < 500, `start() returned ${Math.round(performance.now() - t0)} ms after the stop`);
  assert.equal(server.port, 0, 'never listened');
});
