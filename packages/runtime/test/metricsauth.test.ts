import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Environment } from '@opkit/testenv';
import { ClusterRoleBindings, ClusterRoles } from '../src/client/builtins.ts';
import { Client, loadConfig } from '../src/client/index.ts';
import {
  managerPermissions,
  metricsAuthPermissions,
  metricsReaderClusterRole,
  rbacManifests,
} from '../src/helpers/index.ts';
import { type KubeObject, Manager } from '../src/index.ts';
import { selfSignedCertificate } from '../src/tls/index.ts';
import { recordingLogger, startEnv, waitFor } from './support.ts';

/** An HTTPS GET; `ca` verifies the server, else any certificate is accepted (a self-signed one is). */
function scrape(
  address: string | undefined,
  options: { token?: string; ca?: string; path?: string } = {},
): Promise<{ status: number; text: string; peerCert: string }> {
  const url = new URL(`https://${address}${options.path ?? '/metrics'}`);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
        ...(options.ca ? { ca: options.ca, servername: 'localhost' } : { rejectUnauthorized: false }),
        agent: false,
      },
      (res) => {
        let text = '';
        const peerCert = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256 ?? '';
        res.setEncoding('utf8').on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text, peerCert }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('secure metrics: HTTPS, TokenReview and SubjectAccessReview on testenv', () => {
  let env: Environment;
  let admin: Client;
  let operatorClient: Client;
  let reader: string;
  let stranger: string;
  before(async () => {
    ({ env, client: admin } = await startEnv());
    // the operator runs as its own ServiceAccount with only the generated RBAC: the manager's and the metrics reviews'
    const rbac = rbacManifests('metrics-op', 'default', [...managerPermissions(false), ...metricsAuthPermissions()]);
    await admin.create(ClusterRoles, rbac.clusterRole);
    await admin.create(ClusterRoleBindings, rbac.clusterRoleBinding);
    const op = await env.kubeconfigFor({ namespace: 'default', name: 'metrics-op' });
    operatorClient = new Client(await loadConfig({ path: op.path }), { name: 'metrics-op' });
    // Prometheus: bound to the generated metrics-reader ClusterRole; a stranger: a token and no rights
    const readerRole = metricsReaderClusterRole('metrics-op');
    await admin.create(ClusterRoles, readerRole);
    await admin.create(ClusterRoleBindings, {
      metadata: { name: 'prometheus-metrics-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: readerRole.metadata.name },
      subjects: [{ kind: 'ServiceAccount', name: 'prometheus', namespace: 'default' }],
    } as KubeObject as never);
    reader = (await env.kubeconfigFor({ namespace: 'default', name: 'prometheus', expirationSeconds: 3600 })).token;
    stranger = (await env.kubeconfigFor({ namespace: 'default', name: 'stranger', expirationSeconds: 3600 })).token;
  });
  after(async () => {
    operatorClient?.close();
    admin?.close();
    await env?.stop();
  });

  async function started(metrics: Record<string, unknown>) {
    const mgr = new Manager({
      name: 'metrics-op',
      client: operatorClient,
      log: recordingLogger(),
      metrics: { bindAddress: '127.0.0.1:0', ...metrics },
      health: { bindAddress: '0' },
    });
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    await waitFor('the metrics server', async () => mgr.metricsAddress || undefined, 10_000);
    return {
      address: mgr.metricsAddress,
      stop: async () => {
        stop.abort();
        await running;
      },
    };
  }

  test('no token → 401, a token without the right → 403, a token bound to metrics-reader → 200', async () => {
    const m = await started({});
    try {
      const none = await scrape(m.address);
      assert.equal(none.status, 401, none.text);
      assert.equal(none.text, 'Unauthorized\n');
      const bogus = await scrape(m.address, { token: 'not-a-token' });
      assert.equal(bogus.status, 401, bogus.text);
      assert.equal(bogus.text, 'Unauthorized\n', 'the TokenReview’s error stays in the operator’s log');
      const denied = await scrape(m.address, { token: stranger });
      assert.equal(denied.status, 403, denied.text);
      assert.match(denied.text, /user "system:serviceaccount:default:stranger" cannot get path "\/metrics"/);
      const allowed = await scrape(m.address, { token: reader });
      assert.equal(allowed.status, 200, allowed.text);
      assert.match(allowed.text, /# TYPE rest_client_requests_total counter|# TYPE workqueue_depth gauge|# HELP /);
      // cached answers: the same scrapes again give the same answers
      assert.equal((await scrape(m.address, { token: reader })).status, 200);
      assert.equal((await scrape(m.address, { token: stranger })).status, 403);
      const plain = await fetch(`http://${m.address}/metrics`).then(
        (r) => r.status,
        () => 'refused',
      );
      assert.notEqual(plain, 200, 'no plain-HTTP scrape on the secure port');
    } finally {
      await m.stop();
    }
  });

  test('a certificate directory is served and reloaded when its files change', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'opkit-metrics-cert-'));
    const first = selfSignedCertificate(['localhost', '127.0.0.1']);
    await writeFile(join(dir, 'tls.crt'), first.certPem);
    await writeFile(join(dir, 'tls.key'), first.keyPem);
    const m = await started({ certDir: dir });
    try {
      const a = await scrape(m.address, { token: reader, ca: first.certPem });
      assert.equal(a.status, 200, 'verified against the given certificate');
      const second = selfSignedCertificate(['localhost', '127.0.0.1']);
      await writeFile(join(dir, 'tls.key'), second.keyPem);
      await writeFile(join(dir, 'tls.crt'), second.certPem);
      await waitFor(
        'the rotated certificate',
        async () => {
          const r = await scrape(m.address, { token: reader, ca: second.certPem }).catch(() => undefined);
          return r?.status === 200 ? r : undefined;
        },
        10_000,
      );
    } finally {
      await m.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a certificate directory without the files fails the start with MetricsCertificateUnreadable naming the file', async () => {
    const mgr = new Manager({
      name: 'metrics-op',
      client: operatorClient,
      log: recordingLogger(),
      metrics: { bindAddress: '127.0.0.1:0', certDir: '/nonexistent-opkit-certs' },
      health: { bindAddress: '0' },
    });
    await assert.rejects(mgr.start(new AbortController().signal), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'MetricsCertificateUnreadable');
      assert.match(err.message, /cannot read the metrics certificate \/nonexistent-opkit-certs\/tls\.crt: ENOENT/);
      return true;
    });
  });
});
