import assert from 'node:assert/strict';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import tls, { connect } from 'node:tls';
import { type KubeObject, resource } from '../client/resource.ts';
import { Registry } from '../prometheus.ts';
import { handshakeTls11 } from '../tls/handshake.fixture.ts';
import {
  createCertificateAuthority,
  FileCertificates,
  issueServingCertificate,
  type KeyPair,
  StaticCertificates,
} from '../tls/index.ts';
import { defaulter, fieldErrors, validator } from './admission.ts';
import { WebhookServer } from './server.ts';

interface Widget extends KubeObject {
  spec: { size?: number };
}
const Widgets = resource<Widget>({
  group: 'x.example.com',
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  namespaced: true,
});

const ca = createCertificateAuthority('test-ca');
const pair = issueServingCertificate(ca, ['127.0.0.1', 'localhost']);

interface Reply {
  status: number;
  body: string;
}

function post(
  port: number,
  path: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
  trust = ca.certPem,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        ca: trust,
        agent: false,
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          data += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function review(operation: string, object: unknown, uid = 'uid-1'): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: 'x.example.com', version: 'v1', kind: 'Widget' },
      resource: { group: 'x.example.com', version: 'v1', resource: 'widgets' },
      operation,
      userInfo: { username: 'test' },
      name: 'w',
      namespace: 'default',
      object,
    },
  });
}

const widget = (size?: number) => ({
  apiVersion: 'x.example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w', namespace: 'default' },
  spec: size === undefined ? {} : { size },
});

const registry = new Registry();
const stop = new AbortController();
let server: WebhookServer;
let running: Promise<void>;

before(async () => {
  server = new WebhookServer({
    bindAddress: '127.0.0.1:0',
    certificates: new StaticCertificates(pair),
    registry,
    maxBodyBytes: 64 * 1024,
  });
  server
    .admission(
      '/mutate-widget',
      defaulter(Widgets, (w) => {
        w.spec.size ??= 2;
      }),
    )
    .admission(
      '/validate-widget',
      validator(Widgets, {
        create: (w) =>
          (w.spec.size ?? 0) > 10
            ? { errors: [fieldErrors.invalid('spec.size', w.spec.size, 'must be at most 10')] }
            : { warnings: w.spec.size === 10 ? ['spec.size 10 is the maximum'] : [] },
      }),
    )
    .admission('/slow', async (req, ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      return { uid: req.uid, allowed: true };
    });
  await assert.rejects(server.ready(), { code: 'NotStarted' });
  running = server.start(stop.signal);
  for (let i = 0; i < 100 && server.port === 0; i++) await new Promise((r) => setTimeout(r, 10));
  for (let i = 0; i < 100; i++) {
    try {
      await server.ready();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 10));
    }
  }
});

after(async () => {
  stop.abort();
  await running;
});

test('readiness passes once the server completes a TLS handshake', async () => {
  await server.ready();
});

test('a defaulting review over HTTPS answers with a base64 JSONPatch and the request uid', async () => {
  const r = await post(server.port, '/mutate-widget?timeout=10s', review('CREATE', widget(), 'abc'));
  assert.equal(r.status, 200);
  const body = JSON.parse(r.body) as {
    apiVersion: string;
    kind: string;
    response: { uid: string; allowed: boolean; patch: string };
  };
  assert.equal(body.apiVersion, 'admission.k8s.io/v1');
  assert.equal(body.kind, 'AdmissionReview');
  assert.equal(body.response.uid, 'abc');
  assert.equal(body.response.allowed, true);
  assert.deepEqual(JSON.parse(Buffer.from(body.response.patch, 'base64').toString()), [
    { op: 'add', path: '/spec/size', value: 2 },
  ]);
});

test('a validating review denies with the field named and passes warnings', async () => {
  const denied = JSON.parse((await post(server.port, '/validate-widget', review('CREATE', widget(11)))).body) as {
    response: { allowed: boolean; status: { code: number; message: string } };
  };
  assert.equal(denied.response.allowed, false);
  assert.equal(denied.response.status.code, 422);
  assert.match(denied.response.status.message, /spec\.size: Invalid value: 11: must be at most 10/);
  const warned = JSON.parse((await post(server.port, '/validate-widget', review('CREATE', widget(10)))).body) as {
    response: { allowed: boolean; warnings: string[] };
  };
  assert.equal(warned.response.allowed, true);
  assert.deepEqual(warned.response.warnings, ['spec.size 10 is the maximum']);
});

test('bad bodies get a 400 with a reason, never a crash', async () => {
  const cases: [string | Buffer, RegExp, Record<string, string>?][] = [
    ['{not json', /not JSON/],
    ['', /not JSON/],
    ['[]', /must be a AdmissionReview object/],
    ['null', /must be a AdmissionReview object/],
    [
      '{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}}',
      /expected AdmissionReview admission.k8s.io\/v1/,
    ],
    ['{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}', /request is missing/],
    ['{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}', /uid is missing/],
    [
      '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","operation":"EXPLODE"}}',
      /operation/,
    ],
    [review('CREATE', widget()), /content-type "text\/plain" not supported/, { 'content-type': 'text/plain' }],
    [Buffer.alloc(65 * 1024, 0x20), /larger than 65536 bytes/],
  ];
  for (const [body, message, headers] of cases) {
    const r = await post(server.port, '/validate-widget', body, headers);
    assert.equal(r.status, 400, `${String(body).slice(0, 60)} → ${r.status} ${r.body}`);
    assert.match(r.body, message);
  }
  assert.equal((await post(server.port, '/nowhere', review('CREATE', widget()))).status, 404);
  // still serving
  assert.equal((await post(server.port, '/validate-widget', review('CREATE', widget(1)))).status, 200);
});

test('a handler slower than the apiserver timeout is answered with a denial before the timeout', async () => {
  const started = Date.now();
  const r = await post(server.port, '/slow?timeout=1s', review('CREATE', widget()));
  const took = Date.now() - started;
  assert.equal(r.status, 200);
  const body = JSON.parse(r.body) as { response: { allowed: boolean; status: { code: number } } };
  assert.equal(body.response.allowed, false);
  assert.equal(body.response.status.code, 504);
  assert.ok(took < 1_000, `answered in ${took} ms, before the 1 s timeout`);
});

test('metrics use controller-runtime names', async () => {
  await post(server.port, '/validate-widget', review('CREATE', widget(1)));
  const text = registry.metrics();
  assert.match(text, /controller_runtime_webhook_requests_total\{webhook="\/validate-widget",code="200"\} \d+/);
  assert.match(text, /controller_runtime_webhook_requests_total\{webhook="\/validate-widget",code="400"\} \d+/);
  assert.match(text, /controller_runtime_webhook_latency_seconds_bucket\{webhook="\/validate-widget",le="0.005"\}/);
  assert.match(text, /controller_runtime_webhook_requests_in_flight\{webhook="\/validate-widget"\} 0/);
});

/** The serial number of the certificate a fresh TLS connection is served. */
function servedSerial(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const serial = s.getPeerCertificate().serialNumber;
      s.end();
      resolve(serial);
    });
    s.on('error', reject);
  });
}

test('file certificates: a rotated pair is served to new connections without a restart, and no request is lost', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-webhook-certs-'));
  const write = async (p: KeyPair) => {
    // as the kubelet does: write elsewhere, then swap in atomically
    await writeFile(join(dir, 'tls.crt.tmp'), p.certPem);
    await writeFile(join(dir, 'tls.key.tmp'), p.keyPem);
    await rename(join(dir, 'tls.key.tmp'), join(dir, 'tls.key'));
    await rename(join(dir, 'tls.crt.tmp'), join(dir, 'tls.crt'));
  };
  await write(pair);
  const certs = new FileCertificates({ dir, pollIntervalMs: 200 });
  const s = new WebhookServer({ bindAddress: '127.0.0.1:0', certificates: certs });
  s.admission('/validate-widget', validator(Widgets, {}));
  const ctl = new AbortController();
  const run = s.start(ctl.signal);
  try {
    for (let i = 0; i < 200 && s.port === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const before = await servedSerial(s.port);
    // traffic during the rotation: every request must be answered
    let sent = 0;
    let failed = 0;
    let trafficOn = true;
    const traffic = (async () => {
      while (trafficOn) {
        sent++;
        const r = await post(s.port, '/validate-widget', review('CREATE', widget(1)), {}, ca.certPem).catch(
          () => undefined,
        );
        if (r?.status !== 200) failed++;
      }
    })();
    const rotated = new Promise<void>((resolve) => certs.onChange(() => resolve()));
    const next = issueServingCertificate(ca, ['127.0.0.1']);
    await write(next);
    await rotated;
    let after = before;
    for (let i = 0; i < 100 && after === before; i++) {
      await new Promise((r) => setTimeout(r, 20));
      after = await servedSerial(s.port);
    }
    await new Promise((r) => setTimeout(r, 200));
    trafficOn = false;
    await traffic;
    assert.notEqual(after, before, 'the new certificate is served');
    assert.ok(sent > 5, `traffic flowed (${sent} requests)`);
    assert.equal(failed, 0, `${failed} of ${sent} requests failed during the rotation`);
  } finally {
    ctl.abort();
    await run;
    await rm(dir, { recursive: true, force: true });
  }
});

/** The protocol a client limited to TLS 1.1 gets, or the error code of the refused handshake. */
test('a rotated certificate keeps TLS 1.2 as the minimum, even where the process allows older versions', async () => {
  // a process started with --tls-min-v1.0 and a permissive cipher list: only the server's own settings refuse TLS 1.1
  const saved = { min: tls.DEFAULT_MIN_VERSION, ciphers: tls.DEFAULT_CIPHERS };
  tls.DEFAULT_MIN_VERSION = 'TLSv1';
  tls.DEFAULT_CIPHERS = 'DEFAULT@SECLEVEL=0';
  const certs = new StaticCertificates(pair);
  const s = new WebhookServer({ bindAddress: '127.0.0.1:0', certificates: certs });
  const ctl = new AbortController();
  const run = s.start(ctl.signal);
  try {
    for (let i = 0; i < 200 && s.port === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(await handshakeTls11('127.0.0.1', s.port), 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION', 'at start');
    certs.update(issueServingCertificate(ca, ['127.0.0.1']));
    assert.equal(await handshakeTls11('127.0.0.1', s.port), 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION', 'after a rotation');
  } finally {
    tls.DEFAULT_MIN_VERSION = saved.min;
    tls.DEFAULT_CIPHERS = saved.ciphers;
    ctl.abort();
    await run;
  }
});

test('file certificates: a key that does not match keeps the old pair; missing files name the file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-webhook-certs-'));
  try {
    const missing = new FileCertificates({ dir, purpose: 'webhook' });
    await assert.rejects(missing.load(), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'CertificateMissing');
      assert.match(err.message, /^cannot read the webhook certificate \S+\/tls\.crt: ENOENT — mount/);
      return true;
    });
    await writeFile(join(dir, 'tls.crt'), pair.certPem);
    await writeFile(join(dir, 'tls.key'), pair.keyPem);
    const errors: string[] = [];
    const certs = new FileCertificates({ dir, onError: (e) => errors.push(e.code) });
    await certs.load();
    const other = issueServingCertificate(ca, ['127.0.0.1']);
    await writeFile(join(dir, 'tls.crt'), other.certPem); // the key has not followed yet
    assert.equal(await certs.reload(), false);
    assert.deepEqual(errors, ['KeyMismatch']);
    assert.equal(certs.current().certPem, pair.certPem);
    await writeFile(join(dir, 'tls.key'), other.keyPem);
    assert.equal(await certs.reload(), true);
    assert.equal(certs.current().certPem, other.certPem);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
