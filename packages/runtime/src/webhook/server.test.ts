import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { Agent, request as httpsRequest } from 'node:https';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import tls, { connect } from 'node:tls';
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
import { Widgets } from './widgets.fixture.ts';

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
    })
    .admission('/throws', async () => {
      throw new Error('the quota service is down');
    })
    .conversion('/convert', async (req) => ({
      uid: req.uid,
      convertedObjects: req.objects.map((o) => ({ ...(o as object), apiVersion: req.desiredAPIVersion })),
      result: { status: 'Success' },
    }))
    .conversion('/convert-throws', async () => {
      throw new Error('no hub for this version');
    })
    .conversion('/convert-slow', async (req, ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      return { uid: req.uid, convertedObjects: [], result: { status: 'Success' } };
    });
  await assert.rejects(server.ready(), { code: 'WebhookNotListening' });
  running = server.start(stop.signal);
  await server.listening;
});

after(async () => {
  stop.abort();
  await running;
});

test('readiness passes once the server completes a TLS handshake', async () => {
  await server.ready();
});

test('listening resolves once the server listens: ready() fails right after start() and passes once it resolves', async () => {
  const s = new WebhookServer({ bindAddress: '127.0.0.1:0', certificates: new StaticCertificates(pair) });
  await assert.rejects(s.ready(), { code: 'WebhookNotListening' });
  const ctl = new AbortController();
  const run = s.start(ctl.signal);
  try {
    // start() loads the certificate and binds before it listens: not ready yet, and now there is a way to wait
    await assert.rejects(s.ready(), { code: 'WebhookNotListening' });
    await s.listening;
    assert.notEqual(s.port, 0);
    await s.ready();
    assert.equal((await post(s.port, '/nowhere', '{}')).status, 404, 'it answers requests');
  } finally {
    ctl.abort();
  }
  // not ready from the moment the stop begins, before the open connections are closed
  await assert.rejects(s.ready(), { code: 'WebhookServerStopped' });
  await run;
  await assert.rejects(s.ready(), { code: 'WebhookServerStopped' });
  await s.listening; // it did listen: the promise stays resolved
  await assert.rejects(s.start(new AbortController().signal), { code: 'AlreadyStarted' });
});

test('listening rejects with the error start() rejects with: a port in use, a certificate that cannot be read', async () => {
  const holder = createNetServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  try {
    const port = (holder.address() as AddressInfo).port;
    const s = new WebhookServer({ bindAddress: `127.0.0.1:${port}`, certificates: new StaticCertificates(pair) });
    const run = s.start(new AbortController().signal);
    await assert.rejects(s.listening, { code: 'WebhookBindFailed', message: new RegExp(`127\\.0\\.0\\.1:${port}`) });
    await assert.rejects(run, { code: 'WebhookBindFailed' });
    await assert.rejects(s.ready(), { code: 'WebhookNotListening' });
  } finally {
    holder.close();
  }
  const dir = await mkdtemp(join(tmpdir(), 'opkit-webhook-certs-'));
  try {
    const s = new WebhookServer({ bindAddress: '127.0.0.1:0', certificates: new FileCertificates({ dir }) });
    const run = s.start(new AbortController().signal);
    await assert.rejects(s.listening, { code: 'CertificateMissing' });
    await assert.rejects(run, { code: 'CertificateMissing' });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  // stopped before it could listen: the wait ends too
  const ctl = new AbortController();
  ctl.abort();
  const s = new WebhookServer({ bindAddress: '127.0.0.1:0', certificates: new StaticCertificates(pair) });
  await s.start(ctl.signal);
  await assert.rejects(s.listening, { code: 'WebhookServerStopped' });
});

test('listening, left alone, rejects without an unhandled rejection; a promise chained on it is the caller’s to handle', () => {
  // in a process of its own: the test runner counts an unhandled rejection as a failure of whichever test is running
  const script = `
    const { WebhookServer } = await import(${JSON.stringify(new URL('./server.ts', import.meta.url).href)});
    const { StaticCertificates, selfSignedCertificate } = await import(${JSON.stringify(new URL('../tls/index.ts', import.meta.url).href)});
    const unhandled = [];
    process.on('unhandledRejection', (err) => unhandled.push(err.code));
    const stopped = AbortSignal.abort();
    const make = () => new WebhookServer({ bindAddress: '127.0.0.1:0', certificates: new StaticCertificates(selfSignedCertificate(['127.0.0.1'])) });
    const bare = make();
    await bare.start(stopped); // listening rejects with WebhookServerStopped; nobody looks at it
    const chained = make();
    chained.listening.then(() => {}); // a derived promise, with no catch
    await chained.start(stopped);
    await new Promise((resolve) => setTimeout(resolve, 50));
    process.stdout.write(JSON.stringify(unhandled));
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), ['WebhookServerStopped'], 'only the chained promise is reported');
});

test('drain(): calls are still answered, each on a connection that then closes (keep-alive ends before the stop)', async () => {
  const s = new WebhookServer({ bindAddress: '127.0.0.1:0', certificates: new StaticCertificates(pair) });
  s.admission('/allow', async (req) => ({ uid: req.uid, allowed: true }));
  const stopping = new AbortController();
  const served = s.start(stopping.signal);
  await s.listening;
  const agent = new Agent({ keepAlive: true, ca: ca.certPem, maxSockets: 1 });
  const call = () =>
    new Promise<{ status: number; connection: string | undefined; socket: object }>((resolve, reject) => {
      const req = httpsRequest(
        {
          host: '127.0.0.1',
          port: s.port,
          path: '/allow',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, socket: req.socket as object }),
          );
        },
      );
      req.on('error', reject);
      req.end(review('CREATE', widget(1)));
    });
  try {
    const first = await call();
    const second = await call();
    assert.equal(first.connection, 'keep-alive');
    assert.equal(second.socket, first.socket, 'before drain() the connection is kept and reused');
    s.drain();
    const drained = await call();
    assert.equal(drained.status, 200, 'a call after drain() is still answered');
    assert.equal(drained.connection, 'close', 'and its connection is closed after the answer');
    const next = await call();
    assert.equal(next.status, 200);
    assert.notEqual(next.socket, drained.socket, 'the next call comes on a new connection');
  } finally {
    agent.destroy();
    stopping.abort();
    await served;
  }
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

interface ReviewAnswer {
  apiVersion: string;
  kind: string;
  response: {
    uid: string;
    allowed: boolean;
    status?: { status?: string; code?: number; reason?: string; message?: string };
    patch?: string;
  };
}

test('malformed admission requests are answered inside an AdmissionReview: HTTP 200, allowed false, code 400 or 413', async () => {
  const v1 = 'admission.k8s.io/v1';
  const cases: {
    body: string | Buffer;
    code: 400 | 413;
    message: RegExp;
    uid?: string;
    apiVersion?: string;
    headers?: Record<string, string>;
  }[] = [
    { body: '{not json', code: 400, message: /^the body is not JSON: / },
    { body: '', code: 400, message: /^the request body is empty$/ },
    { body: '[]', code: 400, message: /^the body must be an AdmissionReview object$/ },
    { body: 'null', code: 400, message: /^the body must be an AdmissionReview object$/ },
    {
      body: '{"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview","request":{"uid":"x"}}',
      code: 400,
      message:
        /^expected an AdmissionReview of admission\.k8s\.io\/v1 or admission\.k8s\.io\/v1beta1, got AdmissionReview admission\.k8s\.io\/v2$/,
    },
    {
      body: '{"apiVersion":"admission.k8s.io/v1","kind":"ConversionReview","request":{"uid":"x"}}',
      code: 400,
      message: /^expected an AdmissionReview .*, got ConversionReview admission\.k8s\.io\/v1$/,
    },
    { body: '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}', code: 400, message: /request is missing/ },
    {
      body: '{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"}',
      code: 400,
      message: /request is missing/,
      apiVersion: 'admission.k8s.io/v1beta1',
    },
    {
      body: '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}',
      code: 400,
      message: /uid is missing/,
    },
    {
      body: '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","operation":"EXPLODE"}}',
      code: 400,
      message: /operation "EXPLODE" is not one of CREATE, UPDATE, DELETE, CONNECT/,
      uid: 'x',
    },
    {
      body: review('CREATE', widget()),
      code: 400,
      message: /^content-type "text\/plain" not supported: send application\/json$/,
      headers: { 'content-type': 'text/plain' },
    },
    { body: Buffer.alloc(65 * 1024, 0x20), code: 413, message: /^the request body is larger than 65536 bytes$/ },
  ];
  for (const c of cases) {
    const r = await post(server.port, '/validate-widget', c.body, c.headers);
    const what = `${String(c.body).slice(0, 60)} → ${r.status} ${r.body.slice(0, 200)}`;
    assert.equal(r.status, 200, what);
    const answer = JSON.parse(r.body) as ReviewAnswer;
    assert.equal(answer.apiVersion, c.apiVersion ?? v1, what);
    assert.equal(answer.kind, 'AdmissionReview', what);
    assert.equal(answer.response.uid, c.uid ?? '', what);
    assert.equal(answer.response.allowed, false, what);
    assert.equal(answer.response.status?.status, 'Failure', what);
    assert.equal(answer.response.status?.code, c.code, what);
    assert.equal(answer.response.status?.reason, c.code === 413 ? 'RequestEntityTooLarge' : 'BadRequest', what);
    assert.match(answer.response.status?.message ?? '', c.message, what);
  }
  assert.equal((await post(server.port, '/nowhere', review('CREATE', widget()))).status, 404);
  // still serving
  assert.equal((await post(server.port, '/validate-widget', review('CREATE', widget(1)))).status, 200);
});

test('an admission.k8s.io/v1beta1 review is decoded and answered in v1beta1', async () => {
  const v1beta1 = (body: string) => body.replace('"admission.k8s.io/v1"', '"admission.k8s.io/v1beta1"');
  const denied = await post(server.port, '/validate-widget', v1beta1(review('CREATE', widget(11), 'b1')));
  assert.equal(denied.status, 200);
  const d = JSON.parse(denied.body) as ReviewAnswer;
  assert.equal(d.apiVersion, 'admission.k8s.io/v1beta1');
  assert.equal(d.kind, 'AdmissionReview');
  assert.equal(d.response.uid, 'b1');
  assert.equal(d.response.allowed, false);
  assert.match(d.response.status?.message ?? '', /spec\.size: Invalid value: 11: must be at most 10/);
  const mutated = JSON.parse(
    (await post(server.port, '/mutate-widget', v1beta1(review('CREATE', widget(), 'b2')))).body,
  ) as ReviewAnswer;
  assert.equal(mutated.apiVersion, 'admission.k8s.io/v1beta1');
  assert.equal(mutated.response.uid, 'b2');
  assert.equal(mutated.response.allowed, true);
  assert.deepEqual(JSON.parse(Buffer.from(mutated.response.patch ?? '', 'base64').toString()), [
    { op: 'add', path: '/spec/size', value: 2 },
  ]);
});

test('a handler slower than the apiserver timeout gets an HTTP 504 before the timeout: a failed call, not a denial', async () => {
  const started = Date.now();
  const r = await post(server.port, '/slow?timeout=1s', review('CREATE', widget()));
  const took = Date.now() - started;
  assert.equal(r.status, 504, r.body);
  assert.deepEqual(JSON.parse(r.body), {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    reason: 'Timeout',
    code: 504,
    message: "the admission handler at /slow did not answer within 750 ms (the apiserver's timeout: 1s)",
  });
  assert.ok(took >= 700 && took < 1_000, `answered in ${took} ms, before the 1 s timeout`);
});

/**
 * POSTs `body` in two halves, the second `delayMs` after the first (a slow apiserver connection): resolves with the
 * answer and when it came, counted from the first byte sent. The server may answer before the second half is sent.
 */
function postSlowly(port: number, path: string, body: string, delayMs: number): Promise<Reply & { tookMs: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        ca: ca.certPem,
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        answered = true;
        const tookMs = performance.now() - started;
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          data += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data, tookMs }));
      },
    );
    // a server that answered before the whole body arrived closes the connection: the late half fails to send
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    const half = Math.floor(body.length / 2);
    req.write(body.slice(0, half));
    const timer = setTimeout(() => {
      if (!req.destroyed) req.end(body.slice(half));
    }, delayMs);
    req.on('close', () => clearTimeout(timer));
  });
}

test("the apiserver's timeout counts from the request's arrival: a slow body leaves the handler less time", async () => {
  // the body takes 400 ms: the handler gets the 350 ms left of the 750 ms budget, not 750 ms more
  const r = await postSlowly(server.port, '/slow?timeout=1s', review('CREATE', widget()), 400);
  assert.equal(r.status, 504, r.body);
  assert.equal(
    (JSON.parse(r.body) as { message: string }).message,
    "the admission handler at /slow did not answer within 750 ms (the apiserver's timeout: 1s)",
  );
  assert.ok(r.tookMs >= 700 && r.tookMs < 1_000, `answered ${Math.round(r.tookMs)} ms after the request began`);
});

test("a body that does not arrive within the apiserver's timeout is answered with an HTTP 504 before it", async () => {
  // the body takes 900 ms: by 750 ms nothing is left for a handler, so the server answers without waiting for it
  const r = await postSlowly(server.port, '/slow?timeout=1s', review('CREATE', widget()), 900);
  assert.equal(r.status, 504, r.body);
  assert.deepEqual(JSON.parse(r.body), {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    reason: 'Timeout',
    code: 504,
    message: "the admission request to /slow was not received within 750 ms (the apiserver's timeout: 1s)",
  });
  assert.ok(r.tookMs >= 700 && r.tookMs < 1_000, `answered ${Math.round(r.tookMs)} ms after the request began`);
});

test("conversion reviews get the same budget from arrival: a slow body, then a slow handler, answered before the apiserver's timeout", async () => {
  const conversion = JSON.stringify({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'ConversionReview',
    request: { uid: 'c-slow', desiredAPIVersion: 'x.example.com/v2', objects: [widget(1)] },
  });
  const late = await postSlowly(server.port, '/convert-slow?timeout=1s', conversion, 400);
  assert.equal(late.status, 200, late.body);
  assert.deepEqual((JSON.parse(late.body) as { response: unknown }).response, {
    uid: 'c-slow',
    convertedObjects: [],
    result: {
      status: 'Failure',
      message: "the conversion handler at /convert-slow did not answer within 750 ms (the apiserver's timeout: 1s)",
    },
  });
  assert.ok(late.tookMs >= 700 && late.tookMs < 1_000, `answered after ${Math.round(late.tookMs)} ms`);
  const unread = await postSlowly(server.port, '/convert-slow?timeout=1s', conversion, 900);
  assert.equal(unread.status, 504, unread.body);
  assert.equal(
    (JSON.parse(unread.body) as { message: string }).message,
    "the conversion request to /convert-slow was not received within 750 ms (the apiserver's timeout: 1s)",
  );
  assert.ok(unread.tookMs >= 700 && unread.tookMs < 1_000, `answered after ${Math.round(unread.tookMs)} ms`);
});

test('a handler that throws denies the request with code 500 and the uid, as controller-runtime answers a panic', async () => {
  const r = await post(server.port, '/throws', review('CREATE', widget(), 'u-throws'));
  assert.equal(r.status, 200);
  const answer = JSON.parse(r.body) as ReviewAnswer;
  assert.deepEqual(answer.response, {
    uid: 'u-throws',
    allowed: false,
    status: {
      status: 'Failure',
      code: 500,
      reason: 'InternalError',
      message: 'the admission handler at /throws failed: the quota service is down',
    },
  });
});

test('malformed conversion reviews get a plain HTTP 400 (413 when too large), as controller-runtime', async () => {
  const cases: [string | Buffer, number, RegExp, Record<string, string>?][] = [
    ['{not json', 400, /^the body is not JSON: /],
    ['', 400, /^the request body is empty$/],
    ['[]', 400, /^the body must be a ConversionReview object$/],
    [
      '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x"}}',
      400,
      /^expected a ConversionReview of apiextensions\.k8s\.io\/v1 or apiextensions\.k8s\.io\/v1beta1, got AdmissionReview admission\.k8s\.io\/v1$/,
    ],
    ['{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}', 400, /request is missing/],
    [
      '{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"x"}}',
      400,
      /needs desiredAPIVersion and objects/,
    ],
    ['{}', 400, /expected a ConversionReview/, { 'content-type': 'text/plain' }],
    [Buffer.alloc(65 * 1024, 0x20), 413, /^the request body is larger than 65536 bytes$/],
  ];
  for (const [body, status, message, headers] of cases) {
    const r = await post(server.port, '/convert', body, headers);
    assert.equal(r.status, status, `${String(body).slice(0, 60)} → ${r.status} ${r.body}`);
    assert.match(r.body.trim(), headers ? /content-type "text\/plain" not supported/ : message);
  }
});

test('a v1beta1 ConversionReview is answered in v1beta1; a conversion handler that throws answers a Failure result', async () => {
  const conversion = (apiVersion: string, uid: string) =>
    JSON.stringify({
      apiVersion,
      kind: 'ConversionReview',
      request: { uid, desiredAPIVersion: 'x.example.com/v2', objects: [widget(1)] },
    });
  for (const apiVersion of ['apiextensions.k8s.io/v1', 'apiextensions.k8s.io/v1beta1']) {
    const r = await post(server.port, '/convert', conversion(apiVersion, 'c1'));
    assert.equal(r.status, 200, r.body);
    const answer = JSON.parse(r.body) as {
      apiVersion: string;
      kind: string;
      response: { uid: string; convertedObjects: { apiVersion: string }[]; result: { status: string } };
    };
    assert.equal(answer.apiVersion, apiVersion);
    assert.equal(answer.kind, 'ConversionReview');
    assert.equal(answer.response.uid, 'c1');
    assert.equal(answer.response.result.status, 'Success');
    assert.equal(answer.response.convertedObjects[0]?.apiVersion, 'x.example.com/v2');
  }
  const failed = await post(server.port, '/convert-throws', conversion('apiextensions.k8s.io/v1', 'c2'));
  assert.equal(failed.status, 200);
  assert.deepEqual((JSON.parse(failed.body) as { response: unknown }).response, {
    uid: 'c2',
    convertedObjects: [],
    result: { status: 'Failure', message: 'the conversion handler at /convert-throws failed: no hub for this version' },
  });
});

test('metrics use controller-runtime names', async () => {
  await post(server.port, '/validate-widget', review('CREATE', widget(1)));
  const text = registry.metrics();
  assert.match(text, /controller_runtime_webhook_requests_total\{webhook="\/validate-widget",code="200"\} \d+/);
  assert.match(text, /controller_runtime_webhook_requests_total\{webhook="\/slow",code="504"\} 3/);
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
    await s.listening;
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
    await s.listening;
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

test('a connection opened but never used (a spare one in the apiserver’s pool) does not hold up the stop', async () => {
  const s = new WebhookServer({ bindAddress: '127.0.0.1:0', certificates: new StaticCertificates(pair) });
  const stopping = new AbortController();
  const served = s.start(stopping.signal);
  await s.listening;
  const socket = connect({ host: '127.0.0.1', port: s.port, ca: ca.certPem, servername: 'localhost' });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => resolve());
    socket.once('error', reject);
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => {});
  const t0 = performance.now();
  stopping.abort();
  await served;
  await closed;
  assert.ok(performance.now() - t0 < 1_000, `stopped in ${Math.round(performance.now() - t0)} ms`);
});
