/**
 * 1,000 hostile bodies against the webhook endpoints (seeded, reproducible): random bytes, broken and deeply nested
 * JSON, reviews with every field of the wrong type, huge strings, prototype-pollution keys, oversized bodies. An
 * admission endpoint must answer each with an HTTP 200 AdmissionReview (allowed or denied), a conversion endpoint with
 * a 200 ConversionReview or a 400 (413 for the size) — never a 5xx, a hang or a crash — and the server must answer a
 * valid review afterwards.
 */
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { after, before, test } from 'node:test';
import { Type } from '@sinclair/typebox';
import fc from 'fast-check';
import { defineKind } from '../crd/kind.ts';
import { createCertificateAuthority, issueServingCertificate, StaticCertificates } from '../tls/index.ts';
import { defaulter, fieldErrors, validator } from './admission.ts';
import { converter } from './conversion.ts';
import { WebhookServer } from './server.ts';
import { Widgets } from './widgets.fixture.ts';

const Thing = defineKind({
  group: 'x.example.com',
  kind: 'Thing',
  plural: 'things',
  storage: 'v2',
  versions: { v1: { spec: Type.Object({ n: Type.Integer() }) }, v2: { spec: Type.Object({ m: Type.Integer() }) } },
  conversions: {
    v1: {
      toHub: ({ metadata, spec }) => ({ metadata, spec: { m: spec.n } }),
      fromHub: ({ metadata, spec }) => ({ metadata, spec: { n: spec.m } }),
    },
  },
});

const ca = createCertificateAuthority('hostile-ca');
const stop = new AbortController();
let server: WebhookServer;
let running: Promise<void>;

function post(path: string, body: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: server.port,
        path,
        method: 'POST',
        ca: ca.certPem,
        agent: false,
        timeout: 10_000,
        headers: { 'content-type': 'application/json' },
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
    req.on('timeout', () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', reject);
    req.end(body);
  });
}

before(async () => {
  server = new WebhookServer({
    bindAddress: '127.0.0.1:0',
    certificates: new StaticCertificates(issueServingCertificate(ca, ['127.0.0.1'])),
    maxBodyBytes: 256 * 1024,
  });
  server
    .admission(
      '/mutate',
      defaulter(Widgets, (w) => {
        w.spec.size ??= 1;
      }),
    )
    .admission(
      '/validate',
      validator(Widgets, {
        create: (w) => ({ errors: w.spec.size === 13 ? [fieldErrors.invalid('spec.size', 13, 'unlucky')] : [] }),
        update: (w, old) => ({ warnings: w.spec.size !== old.spec.size ? ['size changed'] : [] }),
      }),
    )
    .conversion('/convert', converter(Thing));
  running = server.start(stop.signal);
  await server.listening;
});

after(async () => {
  stop.abort();
  await running;
});

const anyJson = fc.jsonValue({ maxDepth: 4 });
const hostileValue = fc.oneof(
  anyJson,
  fc.constant('x'.repeat(100_000)),
  fc.constant({ __proto__: { polluted: true }, constructor: { prototype: { polluted: true } } }),
  fc.constant(-0),
  fc.string({ unit: 'binary', maxLength: 64 }),
);
const admissionReview = fc.record(
  {
    apiVersion: fc.oneof(fc.constant('admission.k8s.io/v1'), hostileValue),
    kind: fc.oneof(fc.constant('AdmissionReview'), hostileValue),
    request: fc.oneof(
      hostileValue,
      fc.record(
        {
          uid: fc.oneof(fc.uuid(), hostileValue),
          operation: fc.oneof(fc.constantFrom('CREATE', 'UPDATE', 'DELETE', 'CONNECT'), hostileValue),
          object: fc.oneof(
            hostileValue,
            fc.record({ metadata: fc.oneof(hostileValue, fc.record({ name: hostileValue })), spec: hostileValue }),
          ),
          oldObject: hostileValue,
          name: hostileValue,
          kind: hostileValue,
          userInfo: hostileValue,
        },
        { requiredKeys: [] },
      ),
    ),
  },
  { requiredKeys: [] },
);
const conversionReview = fc.record(
  {
    apiVersion: fc.oneof(fc.constant('apiextensions.k8s.io/v1'), hostileValue),
    kind: fc.oneof(fc.constant('ConversionReview'), hostileValue),
    request: fc.oneof(
      hostileValue,
      fc.record(
        {
          uid: fc.oneof(fc.uuid(), hostileValue),
          desiredAPIVersion: fc.oneof(
            fc.constantFrom('x.example.com/v1', 'x.example.com/v2', 'x.example.com/v9'),
            hostileValue,
          ),
          objects: fc.oneof(
            hostileValue,
            fc.array(
              fc.oneof(
                hostileValue,
                fc.record({
                  apiVersion: hostileValue,
                  kind: fc.constant('Thing'),
                  metadata: hostileValue,
                  spec: hostileValue,
                }),
              ),
              { maxLength: 5 },
            ),
          ),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  { requiredKeys: [] },
);
/** A well-formed envelope around hostile content: what reaches the handlers. */
const hostileContent = fc.oneof(
  fc.record({
    apiVersion: fc.constant('admission.k8s.io/v1'),
    kind: fc.constant('AdmissionReview'),
    request: fc.record({
      uid: fc.uuid(),
      operation: fc.constantFrom('CREATE', 'UPDATE', 'DELETE'),
      object: fc.oneof(hostileValue, fc.record({ metadata: hostileValue, spec: hostileValue })),
      oldObject: fc.oneof(hostileValue, fc.record({ metadata: hostileValue, spec: hostileValue })),
    }),
  }),
  fc.record({
    apiVersion: fc.constant('apiextensions.k8s.io/v1'),
    kind: fc.constant('ConversionReview'),
    request: fc.record({
      uid: fc.uuid(),
      desiredAPIVersion: fc.constantFrom('x.example.com/v1', 'x.example.com/v2', 'x.example.com/v9'),
      objects: fc.array(
        fc.oneof(
          hostileValue,
          fc.record({
            apiVersion: fc.constantFrom('x.example.com/v1', 'x.example.com/v2', 'x.example.com/v3'),
            kind: fc.constant('Thing'),
            metadata: hostileValue,
            spec: hostileValue,
          }),
        ),
        { maxLength: 5 },
      ),
    }),
  }),
);
const body = fc.oneof(
  { weight: 6, arbitrary: hostileContent.map((r) => Buffer.from(JSON.stringify(r))) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 2_048 }).map((b) => Buffer.from(b)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }).map((s) => Buffer.from(s)) },
  { weight: 1, arbitrary: fc.nat({ max: 20_000 }).map((d) => Buffer.from(`${'['.repeat(d)}${']'.repeat(d)}`)) },
  { weight: 1, arbitrary: fc.constant(Buffer.alloc(300 * 1024, 0x7b)) },
  { weight: 4, arbitrary: admissionReview.map((r) => Buffer.from(JSON.stringify(r) ?? 'null')) },
  { weight: 4, arbitrary: conversionReview.map((r) => Buffer.from(JSON.stringify(r) ?? 'null')) },
);

test('1,000 hostile bodies: every answer is a review (200), or a 400 or 413 from /convert, never a 5xx, a hang or a crash', async (t) => {
  const statuses = new Map<string, number>();
  await fc.assert(
    fc.asyncProperty(fc.constantFrom('/mutate', '/validate', '/convert'), body, async (path, b) => {
      const r = await post(path, b);
      const key = `${path === '/convert' ? 'conversion' : 'admission'} ${r.status}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
      const allowed = path === '/convert' ? [200, 400, 413] : [200];
      assert.ok(allowed.includes(r.status), `${path}: ${r.status} ${r.body.slice(0, 200)}`);
      if (r.status === 200) {
        const review = JSON.parse(r.body) as { kind?: unknown; response?: { uid?: unknown; allowed?: unknown } };
        assert.equal(review.kind, path === '/convert' ? 'ConversionReview' : 'AdmissionReview');
        assert.equal(typeof review.response?.uid, 'string', 'a review answer carries the uid');
        if (path !== '/convert') assert.equal(typeof review.response?.allowed, 'boolean');
      }
    }),
    { numRuns: 1_000, seed: 16 },
  );
  t.diagnostic(`answers by endpoint and HTTP status: ${JSON.stringify(Object.fromEntries(statuses))}`);
  assert.ok((statuses.get('admission 200') ?? 0) > 100, JSON.stringify([...statuses]));
  assert.ok((statuses.get('conversion 400') ?? 0) > 50, JSON.stringify([...statuses]));
  const ok = await post(
    '/validate',
    Buffer.from(
      JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { uid: 'u', operation: 'CREATE', object: { metadata: { name: 'w' }, spec: { size: 13 } } },
      }),
    ),
  );
  assert.equal(ok.status, 200);
  assert.match(ok.body, /spec\.size: Invalid value: 13: unlucky/);
});
