/**
 * The Helm chart (dist/chart, from `opkit generate --helm`) with the real helm, built once from Go modules into the
 * user cache: `helm lint`, `helm template` validated by the apiserver (server-side dry run), `helm install`, and the
 * operator converging the sample as the chart's ServiceAccount with the chart's Deployment arguments; then
 * `opkit deploy --helm` upgrading the release and `opkit undeploy --helm` removing it.
 *
 * There is no container runtime here: kwok runs the Deployment's pods as simulated pods (Running and Ready, no process).
 * So the operator runs as a local process, started with the installed Deployment's own container arguments and
 * authenticating as the ServiceAccount the chart created (a TokenRequest): what the chart grants is exactly what it
 * runs with.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { request } from 'node:https';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { KubeObject } from '@opkit/runtime';
import { Applier, Client, loadConfig, parseManifests } from '@opkit/runtime/client';
import {
  ClusterRoleBindings,
  CustomResourceDefinitions,
  type Deployment,
  Deployments,
  Namespaces,
  ServiceAccounts,
} from '@opkit/runtime/kinds';
import { resolveHelm, start } from '@opkit/testenv';
import { applySample, NAME, NAMESPACE } from '../src/install.ts';
import { type Cluster, type OperatorProcess, operator, settled, waitFor } from './support.ts';

const CHART = fileURLToPath(new URL('../dist/chart', import.meta.url));
const DIR = fileURLToPath(new URL('..', import.meta.url));
const OPKIT = fileURLToPath(new URL('./main.ts', import.meta.resolve('@opkit/cli')));

function run(bin: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(bin, args, { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 180_000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

function scrape(address: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `https://${address}/metrics`,
      { headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false, agent: false },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('the Helm chart on testenv, with the real helm', () => {
  let c: Cluster;
  let admin: Client;
  let helm: string;
  let op: OperatorProcess | undefined;
  before(async () => {
    helm = await resolveHelm({ pinned: true });
    const env = await start({ nodes: 2, podsPerNode: 200, log: () => {} });
    admin = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'helm-test' });
    c = { env, admin, operatorKubeconfig: '' };
  });
  after(async () => {
    await op?.stop();
    admin?.close();
    await c?.env.stop();
  });

  test('helm lint --strict passes', () => {
    const r = run(helm, ['lint', '--strict', CHART]);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  test('helm template: a digest image renders repository@digest, a tagless one :latest; no leader election, 1 replica', () => {
    const deployment = (...set: string[]) => {
      const r = run(helm, ['template', NAME, CHART, '--namespace', NAMESPACE, ...set]);
      assert.equal(r.code, 0, r.out);
      const d = parseManifests(r.out, 'helm template').find((o) => o.kind === 'Deployment') as Deployment;
      return { image: d.spec?.template.spec?.containers[0]?.image, replicas: d.spec?.replicas };
    };
    const digest = `sha256:${'0a'.repeat(32)}`;
    assert.deepEqual(deployment('--set', 'image.repository=reg.example.org/op', '--set', `image.digest=${digest}`), {
      image: `reg.example.org/op@${digest}`,
      replicas: 2,
    });
    assert.deepEqual(deployment('--set', 'image.repository=reg.example.org/op', '--set', 'image.tag='), {
      image: 'reg.example.org/op:latest',
      replicas: 2,
    });
    assert.equal(deployment('--set', 'leaderElection.enabled=false').replicas, 1);
  });

  test('helm template, in both metrics modes, is accepted by the apiserver (server-side dry run)', async () => {
    await admin.create(Namespaces, { metadata: { name: NAMESPACE } });
    const applier = new Applier(admin, 'helm-test');
    for (const set of [[], ['--set', 'metrics.secure=false', '--set', 'leaderElection.namespace=kube-system']]) {
      const r = run(helm, ['template', NAME, CHART, '--namespace', NAMESPACE, '--include-crds', ...set]);
      assert.equal(r.code, 0, r.out);
      const objects = parseManifests(r.out, 'helm template');
      assert.deepEqual(
        objects.map((o) => o.kind),
        [
          'CustomResourceDefinition',
          'ServiceAccount',
          'ClusterRole',
          'ClusterRole',
          'ClusterRoleBinding',
          'Role',
          'RoleBinding',
          'Service',
          'Deployment',
        ],
      );
      for (const o of objects) {
        const type = await applier.resourceFor(o.apiVersion ?? '', o.kind ?? '').catch(() => undefined);
        // the CRD's own kind is served only after it is installed; the CRD itself is dry-run like everything else
        if (!type) continue;
        await admin.create(type, o, { dryRun: true, fieldManager: 'helm-test' });
      }
      const deployment = objects.find((o) => o.kind === 'Deployment') as Deployment;
      const args = deployment.spec?.template.spec?.containers[0]?.args ?? [];
      if (set.length === 0) assert.ok(args.includes('--metrics-bind-address=:8443'), args.join(' '));
      else {
        assert.ok(args.includes('--metrics-secure=false') && args.includes('--metrics-bind-address=:8080'));
        assert.ok(args.includes('--leader-election-namespace=kube-system'));
        const role = objects.find((o) => o.kind === 'Role');
        assert.equal(role?.metadata.namespace, 'kube-system', 'the Lease Role follows the Lease');
      }
    }
    await assert.rejects(admin.get(Deployments, { namespace: NAMESPACE, name: NAME }), 'a dry run creates nothing');
  });

  test('helm install: the chart’s Deployment runs (on kwok) and the operator, as the chart’s ServiceAccount, converges the sample', async () => {
    const r = run(helm, [
      'install',
      NAME,
      CHART,
      '--namespace',
      NAMESPACE,
      '--create-namespace',
      '--kubeconfig',
      c.env.kubeconfigPath,
      '--wait',
      '--timeout',
      '2m',
    ]);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /STATUS: deployed/);
    assert.ok(await admin.get(CustomResourceDefinitions, { name: 'appservices.app.example.com' }), 'crds/ installed');
    const d = await admin.get(Deployments, { namespace: NAMESPACE, name: NAME });
    assert.equal(d.status?.readyReplicas, 2, 'helm --wait saw the 2 replicas Ready');
    const container = d.spec?.template.spec?.containers[0];
    assert.equal(container?.image, 'appservice-operator:0.1.0');
    await admin.get(ServiceAccounts, { namespace: NAMESPACE, name: NAME });

    // the operator with the installed Deployment's arguments, as the chart's ServiceAccount, on loopback ports
    const sa = await c.env.kubeconfigFor({ namespace: NAMESPACE, name: NAME });
    op = operator({ ...c, operatorKubeconfig: sa.path }, [
      ...(container?.args ?? []),
      '--metrics-bind-address=127.0.0.1:0',
      '--health-probe-bind-address=0',
    ]);
    await applySample(admin);
    await settled(c, 'default', 'example-appservice', 3);

    // its metrics: secure, as the chart's default says; Prometheus bound to the chart's metrics-reader role may read
    const address = await waitFor(
      'the operator to serve metrics',
      async () => /https \(authenticated\) ([\d.]+:\d+)/.exec(op?.log ?? '')?.[1],
      10_000,
    );
    await admin.create(ClusterRoleBindings, {
      metadata: { name: 'prometheus-appservice-metrics' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${NAME}-metrics-reader` },
      subjects: [{ kind: 'ServiceAccount', name: 'prometheus', namespace: 'default' }],
    } as KubeObject as never);
    const prometheus = await c.env.kubeconfigFor({ namespace: 'default', name: 'prometheus' });
    const stranger = await c.env.kubeconfigFor({ namespace: 'default', name: 'stranger' });
    assert.equal(await scrape(address, prometheus.token), 200);
    assert.equal(await scrape(address, stranger.token), 403);
    assert.equal(await op.stop(), 0, op.log.slice(-2000));
    op = undefined;
  });

  test('opkit deploy --helm applies the CRDs, upgrades the release with the image; opkit undeploy --helm uninstalls it', async () => {
    const kube = ['--kubeconfig', c.env.kubeconfigPath];
    const deploy = (image: string) =>
      run(
        process.execPath,
        ['--conditions=@opkit/source', OPKIT, 'deploy', '--helm', '--dir', DIR, '--image', image, ...kube],
        { OPKIT_HELM: helm },
      );
    const image = async () =>
      (await admin.get(Deployments, { namespace: NAMESPACE, name: NAME })).spec?.template.spec?.containers[0]?.image;
    // a tagless --image is that image's latest, never the project's tag
    const tagless = deploy('registry.example.org/appservice');
    assert.equal(tagless.code, 0, tagless.out);
    assert.match(tagless.out, /REVISION: 2/);
    assert.equal(await image(), 'registry.example.org/appservice:latest');
    // the CRDs were server-side applied by opkit before helm (which never upgrades crds/)
    assert.match(tagless.out, /applied CustomResourceDefinition appservices\.app\.example\.com/);
    const crd = await admin.get(CustomResourceDefinitions, { name: 'appservices.app.example.com' });
    assert.ok(
      crd.metadata.managedFields?.some((f) => f.manager === 'opkit' && f.operation === 'Apply'),
      JSON.stringify(crd.metadata.managedFields?.map((f) => [f.manager, f.operation])),
    );
    const deployed = deploy('registry.example.org/appservice:2.0.0');
    assert.equal(deployed.code, 0, deployed.out);
    assert.match(deployed.out, /REVISION: 3/);
    assert.equal(await image(), 'registry.example.org/appservice:2.0.0');
    const removed = run(
      process.execPath,
      ['--conditions=@opkit/source', OPKIT, 'undeploy', '--helm', '--dir', DIR, ...kube],
      {
        OPKIT_HELM: helm,
      },
    );
    assert.equal(removed.code, 0, removed.out);
    assert.match(removed.out, /uninstalled the Helm release appservice-operator \(its CRDs stay/);
    await waitFor(
      'the Deployment to go',
      async () =>
        (await admin.get(Deployments, { namespace: NAMESPACE, name: NAME }).then(
          () => undefined,
          () => true,
        )) || undefined,
      30_000,
    );
    assert.ok(await admin.get(CustomResourceDefinitions, { name: 'appservices.app.example.com' }));
  });
});
