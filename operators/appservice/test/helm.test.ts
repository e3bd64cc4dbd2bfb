/**
 * The Helm chart (dist/chart, from `opkit generate --helm`) with the real helm, built once from Go modules into the
 * user cache: `helm lint`, `helm template` validated by the apiserver (server-side dry run), `helm install`, and the
 * operator converging the sample as the chart's ServiceAccount with the chart's Deployment arguments; then
 * `opkit deploy --helm` upgrading the release and `opkit undeploy --helm` removing it.
 *
 * There is no container runtime here: kwok runs the Deployment's pods as simulated pods (Running and Ready, no process).
 * So the operator runs as a local process, started with the installed Deployment's own container arguments and
 * authenticating as the ServiceAccount the chart created (a TokenRequest): what the chart grants is exactly what it
 * runs with. Nor is there cert-manager: the chart is installed with `certManager.enabled=false` and
 * `webhook.certificates=external`, and the webhooks (admission and conversion) are served from this process
 * (`serveWebhooksLocally`), with the chart's webhook configurations and the CRD's conversion pointed at it, as the
 * other tests do; the operator runs with ENABLE_WEBHOOKS=false.
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
import { pointWebhooksAt } from '@opkit/runtime/webhook';
import { resolveHelm, start } from '@opkit/testenv';
import { applySample, type LocalWebhooks, NAME, NAMESPACE, serveWebhooksLocally } from '../src/install.ts';
import { type Cluster, type OperatorProcess, operator, settled, waitFor } from './support.ts';

const CHART = fileURLToPath(new URL('../dist/chart', import.meta.url));
const DIR = fileURLToPath(new URL('..', import.meta.url));
const OPKIT = fileURLToPath(new URL('./main.ts', import.meta.resolve('@opkit/cli')));
const CRD = 'appservices.app.example.com';
/** No cert-manager on testenv: the webhook certificate comes from elsewhere (here, this process's local server). */
const WITHOUT_CERT_MANAGER = ['--set', 'certManager.enabled=false', '--set', 'webhook.certificates=external'];

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
  let local: LocalWebhooks | undefined;
  before(async () => {
    helm = await resolveHelm({ pinned: true });
    const env = await start({ nodes: 2, podsPerNode: 200, log: () => {} });
    admin = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'helm-test' });
    c = { env, admin, operatorKubeconfig: '' };
  });
  after(async () => {
    await op?.stop();
    local?.stop();
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

  test('helm template: values that cannot work together fail with a message naming what to set', () => {
    const template = (...set: string[]) => run(helm, ['template', NAME, CHART, '--namespace', NAMESPACE, ...set]);
    const noCertificate = template('--set', 'certManager.enabled=false');
    assert.notEqual(noCertificate.code, 0);
    assert.match(
      noCertificate.out,
      /certManager\.enabled=false leaves the webhooks \(admission and CRD conversion\) without a certificate the apiserver trusts: set webhook\.certificates=selfManaged .* or webhook\.certificates=external/,
    );
    const both = template('--set', 'webhook.certificates=selfManaged');
    assert.notEqual(both.code, 0);
    assert.match(both.out, /webhook\.certificates=selfManaged needs certManager\.enabled=false/);
    const unknown = template('--set', 'certManager.enabled=false', '--set', 'webhook.certificates=vault');
    assert.match(unknown.out, /webhook\.certificates=vault: use selfManaged or external/);
  });

  test('helm template, in each metrics and webhook mode, is accepted by the apiserver (server-side dry run)', async () => {
    await admin.create(Namespaces, { metadata: { name: NAMESPACE } });
    const applier = new Applier(admin, 'helm-test');
    const rbac = ['ServiceAccount', 'ClusterRole', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
    const selfManagedRbac = ['ServiceAccount', 'ClusterRole', 'ClusterRole', 'ClusterRole'];
    const modes: { set: string[]; kinds: string[] }[] = [
      {
        set: [],
        kinds: [
          'CustomResourceDefinition',
          ...rbac,
          'Service',
          'Service',
          'Deployment',
          'Certificate',
          'Issuer',
          'MutatingWebhookConfiguration',
          'ValidatingWebhookConfiguration',
        ],
      },
      {
        set: [
          '--set',
          'metrics.secure=false',
          '--set',
          'leaderElection.namespace=kube-system',
          '--set',
          'certManager.enabled=false',
          '--set',
          'webhook.certificates=selfManaged',
        ],
        kinds: [
          'CustomResourceDefinition',
          ...selfManagedRbac,
          'ClusterRoleBinding',
          'ClusterRoleBinding',
          'Role',
          'Role',
          'RoleBinding',
          'RoleBinding',
          'Service',
          'Service',
          'Deployment',
          'MutatingWebhookConfiguration',
          'ValidatingWebhookConfiguration',
        ],
      },
      // no admission webhooks; the CRD still converts through the webhook Service, so that stays
      {
        set: ['--set', 'webhook.enabled=false'],
        kinds: ['CustomResourceDefinition', ...rbac, 'Service', 'Service', 'Deployment', 'Certificate', 'Issuer'],
      },
    ];
    for (const { set, kinds } of modes) {
      const r = run(helm, ['template', NAME, CHART, '--namespace', NAMESPACE, '--include-crds', ...set]);
      assert.equal(r.code, 0, r.out);
      const objects = parseManifests(r.out, 'helm template');
      assert.deepEqual(
        objects.map((o) => o.kind),
        kinds,
        set.join(' '),
      );
      // Every object is dry-run, but cert-manager's Issuer and Certificate: testenv has no cert-manager, so the
      // apiserver does not serve their kinds. The CRD is dry-run like the rest (its AppService kind is in no template).
      const skipped: string[] = [];
      for (const o of objects) {
        if (o.apiVersion === 'cert-manager.io/v1') {
          skipped.push(o.kind ?? '');
          continue;
        }
        const type = await applier.resourceFor(o.apiVersion ?? '', o.kind ?? '');
        await admin.create(type, o, { dryRun: true, fieldManager: 'helm-test' });
      }
      assert.deepEqual(
        skipped,
        kinds.filter((k) => k === 'Certificate' || k === 'Issuer'),
      );
      const deployment = objects.find((o) => o.kind === 'Deployment') as Deployment;
      const pod = deployment.spec?.template.spec;
      const args = pod?.containers[0]?.args ?? [];
      const ports = (pod?.containers[0]?.ports ?? []).map((p) => p.name);
      assert.ok(ports.includes('webhook-server'), 'the manager serves the conversion webhook in every mode');
      const configurations = objects.filter((o) => o.kind?.endsWith('WebhookConfiguration'));
      if (set.length === 0) {
        assert.ok(args.includes('--metrics-bind-address=:8443'), args.join(' '));
        assert.deepEqual(
          pod?.volumes?.map((v) => v.secret?.secretName),
          [`${NAME}-webhook-server-cert`],
          'cert-manager’s Secret is mounted',
        );
        for (const c of configurations) {
          assert.equal(c.metadata.annotations?.['cert-manager.io/inject-ca-from'], `${NAMESPACE}/${NAME}-serving-cert`);
        }
      } else if (set.includes('webhook.certificates=selfManaged')) {
        assert.ok(args.includes('--metrics-secure=false') && args.includes('--metrics-bind-address=:8080'));
        assert.ok(args.includes('--leader-election-namespace=kube-system'));
        const role = objects.find((o) => o.kind === 'Role' && o.metadata.name === NAME);
        assert.equal(role?.metadata.namespace, 'kube-system', 'the Lease Role follows the Lease');
        assert.equal(pod?.volumes, undefined, 'a self-managed certificate is read from the API, not mounted');
        const certs = objects.find((o) => o.kind === 'Role' && o.metadata.name === `${NAME}-webhook-certs`);
        assert.equal(certs?.metadata.namespace, NAMESPACE);
        for (const c of configurations) assert.equal(c.metadata.annotations, undefined, 'no cert-manager injection');
      } else {
        assert.deepEqual(configurations, [], 'webhook.enabled=false: no admission webhooks');
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
      ...WITHOUT_CERT_MANAGER,
    ]);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /STATUS: deployed/);
    assert.ok(await admin.get(CustomResourceDefinitions, { name: CRD }), 'crds/ installed');

    // the webhooks (admission and conversion), served here: the chart's configurations and the CRD pointed at them
    local = await serveWebhooksLocally();
    const applier = new Applier(admin, 'helm-test');
    const webhookObjects = [
      ['apiextensions.k8s.io/v1', 'CustomResourceDefinition', CRD],
      ['admissionregistration.k8s.io/v1', 'MutatingWebhookConfiguration', `${NAME}-mutating-webhook-configuration`],
      ['admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration', `${NAME}-validating-webhook-configuration`],
    ] as const;
    const installed: KubeObject[] = [];
    for (const [apiVersion, kind, name] of webhookObjects) {
      const type = await applier.resourceFor(apiVersion, kind);
      const live = await admin.get(type, { name });
      installed.push(live);
      await admin.update(type, pointWebhooksAt(live, local.url, local.caBundle));
    }
    try {
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
      const app = await settled(c, 'default', 'example-appservice', 3).catch((err: Error) => {
        throw new Error(`${err.message}; the operator's log ends:\n${op?.log.slice(-3000)}`, { cause: err });
      });
      // stored as v1 and read as v1alpha1 through the conversion served here, defaulted by the mutating webhook
      assert.equal(app.spec.maxUnavailable, 1, 'a quarter of 3 replicas, at least 1');

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
    } finally {
      // as the release installed them again (in-cluster Service, no local URL), so helm upgrades them from there
      for (const [i, [apiVersion, kind, name]] of webhookObjects.entries()) {
        const type = await applier.resourceFor(apiVersion, kind);
        const live = (await admin.get(type, { name })) as KubeObject & { spec?: { conversion?: unknown } };
        const was = installed[i] as KubeObject & { spec?: { conversion?: unknown }; webhooks?: unknown };
        if (kind === 'CustomResourceDefinition') {
          await admin.update(type, { ...live, spec: { ...live.spec, conversion: was.spec?.conversion } } as KubeObject);
        } else await admin.update(type, { ...live, webhooks: was.webhooks } as KubeObject);
      }
      local.stop();
      local = undefined;
    }
  });

  test('opkit deploy --helm (cert-manager off, set after --) applies the CRDs, upgrades the release with the image; opkit undeploy --helm uninstalls it', async () => {
    const kube = ['--kubeconfig', c.env.kubeconfigPath];
    const deploy = (image: string) =>
      run(
        process.execPath,
        [
          '--conditions=@opkit/source',
          OPKIT,
          'deploy',
          '--helm',
          '--dir',
          DIR,
          '--image',
          image,
          ...kube,
          '--',
          ...WITHOUT_CERT_MANAGER,
        ],
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
    // the values after -- reached helm
    const values = run(helm, ['get', 'values', NAME, '--namespace', NAMESPACE, '--output', 'json', ...kube]);
    assert.equal(values.code, 0, values.out);
    const given = JSON.parse(values.out) as Record<string, unknown>;
    assert.deepEqual(
      { certManager: given.certManager, webhook: given.webhook },
      { certManager: { enabled: false }, webhook: { certificates: 'external' } },
    );
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
