import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Client } from '../client/client.ts';
import { ApiError } from '../client/errors.ts';
import type { Logger } from '../logger.ts';
import { createCertificateAuthority, issueServingCertificate } from '../tls/issue.ts';
import { CertificateError } from '../tls/keypair.ts';
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

test('SecretCertificates.load rejects promptly (with the signal’s reason) when its signal aborts while it waits for the Secret', async () => {
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
      (err: Error) => err.name,
    ),
    new Promise<string>((resolve) => {
      timer = setTimeout(resolve, 3_000, 'still waiting after 3 s');
    }),
  ]);
  clearTimeout(timer);
  assert.equal(outcome, 'AbortError');
  assert.ok(performance.now() - t0 < 1_000, `rejected after ${Math.round(performance.now() - t0)} ms`);
  assert.equal(reads.count, 1, 'no read after the abort');
  await assert.rejects(certs.load(AbortSignal.abort()), { name: 'AbortError' });
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

/** A client whose every read of the Secret fails with `fail()`; counts the reads. */
function failingReads(fail: () => unknown) {
  const reads = { count: 0 };
  const client = {
    async get() {
      reads.count += 1;
      throw fail();
    },
  };
  return { client: client as unknown as Client, reads };
}

test('SecretCertificates.load fails at once when RBAC refuses the Secret, naming the rule the operator lacks', async () => {
  const refusal = new ApiError(
    'Forbidden',
    'secrets "webhook-certs" is forbidden: User "system:serviceaccount:op-system:op" cannot get resource "secrets" in API group "" in the namespace "op-system"',
    { status: 403 },
  );
  const { client, reads } = failingReads(() => refusal);
  const certs = new SecretCertificates({ client, namespace: 'op-system', secretName: 'webhook-certs', hosts: ['x'] });
  const t0 = performance.now();
  const err = await certs.load().then(
    () => assert.fail('loaded'),
    (e: unknown) => e,
  );
  assert.ok(performance.now() - t0 < 500, `failed after ${Math.round(performance.now() - t0)} ms, not after 2 minutes`);
  assert.equal(reads.count, 1, 'a refusal is not retried');
  assert.ok(err instanceof CertificateError);
  assert.equal(err.code, 'CertificateForbidden');
  assert.equal(err.cause, refusal);
  assert.equal(
    err.message,
    `cannot read Secret op-system/webhook-certs: ${refusal.message} — the operator needs get on secrets named ` +
      'webhook-certs in namespace op-system (the Role selfManagedRbac makes)',
  );
});

test('SecretCertificates.load that gives up names the last error it met, as message and cause', async () => {
  const other = createCertificateAuthority('other');
  const mismatched = issueServingCertificate(createCertificateAuthority('ca'), ['x']);
  // the Secret holds a certificate with another pair's key: checkKeyPair refuses it on every read
  const secret = {
    metadata: { name: 'webhook-certs', namespace: 'op-system' },
    data: {
      'tls.crt': Buffer.from(mismatched.certPem).toString('base64'),
      'tls.key': Buffer.from(other.keyPem).toString('base64'),
    },
  };
  let reads = 0;
  const client = {
    async get() {
      reads += 1;
      return secret;
    },
  } as unknown as Client;
  let now = 1_700_000_000_000;
  const certs = new SecretCertificates({
    client,
    namespace: 'op-system',
    secretName: 'webhook-certs',
    hosts: ['x'],
    now: () => {
      const t = now;
      now += 121_000; // each look at the clock: past the 2 minutes
      return t;
    },
  });
  const err = await certs.load().then(
    () => assert.fail('loaded'),
    (e: unknown) => e,
  );
  assert.equal(reads, 1);
  assert.ok(err instanceof CertificateError);
  assert.equal(err.code, 'CertificateMissing');
  assert.ok(err.cause instanceof CertificateError, 'the last error is the cause');
  assert.equal(err.cause.code, 'KeyMismatch');
  assert.equal(
    err.message,
    'Secret op-system/webhook-certs has no usable tls.crt/tls.key after 2 minutes: Secret op-system/webhook-certs: ' +
      'the private key does not belong to the certificate',
  );

  // with no error, only a missing Secret, the message asks about the rotator, as before
  const missing = new SecretCertificates({
    client: noSecret().client,
    namespace: 'op-system',
    secretName: 'webhook-certs',
    hosts: ['x'],
    now: () => {
      const t = now;
      now += 121_000;
      return t;
    },
  });
  await assert.rejects(missing.load(), {
    code: 'CertificateMissing',
    message:
      'Secret op-system/webhook-certs has no usable tls.crt/tls.key after 2 minutes: is the leader running its CertificateRotator?',
  });
});

test('SecretCertificates.refresh logs a failed re-read with its cause, and keeps the pair it serves', async () => {
  const pair = issueServingCertificate(createCertificateAuthority('ca'), ['x']);
  let fail: unknown;
  const client = {
    async get() {
      if (fail) throw fail;
      return {
        metadata: { name: 'webhook-certs', namespace: 'op-system' },
        data: {
          'tls.crt': Buffer.from(pair.certPem).toString('base64'),
          'tls.key': Buffer.from(pair.keyPem).toString('base64'),
        },
      };
    },
  } as unknown as Client;
  const logged: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  const log: Logger = {
    debug: (fields, message) => logged.push({ level: 'debug', fields, message }),
    info: (fields, message) => logged.push({ level: 'info', fields, message }),
    warn: (fields, message) => logged.push({ level: 'warn', fields, message }),
    error: (fields, message) => logged.push({ level: 'error', fields, message }),
    child: () => log,
  };
  const certs = new SecretCertificates({
    client,
    namespace: 'op-system',
    secretName: 'webhook-certs',
    hosts: ['x'],
    log,
  });
  await certs.load();
  fail = new ApiError('Forbidden', 'secrets "webhook-certs" is forbidden', { status: 403 });
  assert.equal(await certs.refresh(), false);
  assert.equal(certs.current().certPem, pair.certPem, 'the pair served so far stays');
  assert.deepEqual(logged, [
    {
      level: 'warn',
      fields: { secret: 'op-system/webhook-certs', err: 'secrets "webhook-certs" is forbidden' },
      message: 'cannot re-read the webhook serving certificate; serving the one loaded before',
    },
  ]);
});
