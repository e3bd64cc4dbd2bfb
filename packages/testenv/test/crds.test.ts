// start({ crds }): CRDs from files, directories and objects installed as the control plane comes up, as envtest's
// CRDDirectoryPaths. Served when start() resolves, known to the garbage collector from its start (no restart of
// kube-controller-manager for them), and every bad input refused before anything starts, naming the file.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { type Environment, isTestenvError, type StartOptions, start } from '../src/index.ts';
import { anyFieldsCrd, waitFor } from './helpers.ts';

/** A namespaced CRD `<plural>.crds.example.com` whose objects take any field. */
const crd = (plural: string, served?: readonly string[]) => anyFieldsCrd('crds.example.com', plural, served);

const yamlOf = (o: object) => JSON.stringify(o); // JSON is YAML

describe('start({ crds })', () => {
  let dir: string;
  let env: Environment;
  const log: string[] = [];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'opkit-crds-'));
    const bases = join(dir, 'config/crd/bases');
    await mkdir(bases, { recursive: true });
    // two documents in one YAML file, a JSON file, and files that are not CRDs to read
    await writeFile(join(bases, 'a.yaml'), `${yamlOf(crd('apples', ['v1', 'v2']))}\n---\n${yamlOf(crd('pears'))}\n`);
    await writeFile(join(bases, 'b.json'), JSON.stringify(crd('plums')));
    await writeFile(join(bases, 'kustomization.yaml'), 'resources:\n  - a.yaml\n');
    await writeFile(join(bases, 'README.md'), '# not a CRD\n');
    env = await start({
      nodes: 0,
      log: (line) => log.push(line),
      crds: [pathToFileURL(`${bases}/`), crd('figs'), { crd: () => crd('limes') }],
    });
  });
  after(async () => {
    await env?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('every CRD of the directory, the object and the kind is served when start() resolves, each served version', async (t) => {
    for (const path of ['apples', 'pears', 'plums', 'figs', 'limes'].map(
      (p) => `/apis/crds.example.com/v1/namespaces/default/${p}`,
    )) {
      assert.equal((await env.api.request({ path })).status, 200, path);
    }
    assert.equal((await env.api.request({ path: '/apis/crds.example.com/v2/apples' })).status, 200, 'v2 too');
    assert.match(
      log.join('\n'),
      /control plane ready in [\d.]+ s \(.*apiserver: [\d.]+ s, crds: [\d.]+ s, controllers/,
    );
    const t0 = performance.now();
    await env.api.must({
      method: 'POST',
      path: '/apis/crds.example.com/v1/namespaces/default/apples',
      body: { apiVersion: 'crds.example.com/v1', kind: 'Apple', metadata: { name: 'first' } },
    });
    const took = performance.now() - t0;
    t.diagnostic(`the first create of a custom resource took ${Math.round(took)} ms after start()`);
    // the apiserver's hold on a new kind (a 2 s sleep in the first creates) has passed when start() resolves
    assert.ok(took < 1_900, `the first create took ${Math.round(took)} ms (held: 2,000 ms or more)`);
  });

  test('the garbage collector knows the kinds from its start: no restart of kube-controller-manager, children collected at once', async () => {
    const kcm = env.pids['kube-controller-manager'];
    const owner = await env.api.must<{ metadata: { uid: string } }>({
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'pear-owner' } },
    });
    const ownerReferences = [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'pear-owner', uid: owner.metadata.uid }];
    const path = '/apis/crds.example.com/v1/namespaces/default/pears';
    await env.api.must({
      method: 'POST',
      path,
      body: { apiVersion: 'crds.example.com/v1', kind: 'Pear', metadata: { name: 'p', ownerReferences } },
    });
    await env.api.must({ method: 'DELETE', path: '/api/v1/namespaces/default/configmaps/pear-owner' });
    await waitFor(
      'the Pear to be collected',
      async () => (await env.api.request({ path: `${path}/p` })).status === 404,
      20_000,
    );
    assert.equal(env.pids['kube-controller-manager'], kcm, 'the same kube-controller-manager');
    assert.doesNotMatch(log.join('\n'), /kube-controller-manager restarted/);
  });

  test("startTestManager's apply of a CRD installed here replaces it: a conversion it sets otherwise, or leaves out", async () => {
    const path = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/apples.crds.example.com';
    const apply = (body: object) =>
      env.api.request({
        method: 'PATCH',
        path: `${path}?fieldManager=opkit-test&force=true`,
        contentType: 'application/apply-patch+yaml',
        body,
      });
    const base = crd('apples', ['v1', 'v2']);
    const withConversion = (clientConfig: object) => ({
      ...base,
      spec: {
        ...base.spec,
        conversion: { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig } },
      },
    });
    const service = await apply(
      withConversion({ service: { namespace: 'default', name: 'apples-webhook-service', path: '/convert' } }),
    );
    assert.equal(service.status, 200, service.text);
    const url = await apply(withConversion({ url: 'https://127.0.0.1:1/convert' }));
    assert.equal(url.status, 200, `service → url: ${url.text}`);
    const none = await apply(base);
    assert.equal(none.status, 200, none.text);
    const now = await env.api.must<{ spec: { conversion?: { strategy: string; webhook?: unknown } } }>({ path });
    assert.equal(now.spec.conversion?.strategy, 'None', 'left out: back to the default');
    assert.equal(now.spec.conversion?.webhook, undefined);
  });
});

describe('start({ crds }) refuses bad input before anything starts, naming the file', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'opkit-crds-bad-'));
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const refused = async (crds: NonNullable<StartOptions['crds']>, pattern: RegExp) => {
    const t0 = performance.now();
    await assert.rejects(start({ nodes: 0, log: () => {}, crds }), (err) => {
      assert.ok(isTestenvError(err, 'InvalidOption'), String(err));
      assert.match((err as Error).message, pattern);
      return true;
    });
    assert.ok(performance.now() - t0 < 5_000, 'before any component starts');
  };

  test('a path that does not exist', async () => {
    await refused([join(dir, 'config/crd/bsaes')], /crds: .*config\/crd\/bsaes does not exist: give the directory/);
  });

  test('a directory with no CRD', async () => {
    await mkdir(join(dir, 'empty'));
    await writeFile(join(dir, 'empty/kustomization.yaml'), 'resources: []\n');
    await refused([join(dir, 'empty')], /crds: .*empty holds no CRD .*run opkit generate/);
  });

  test('a document that is not a CRD, named with its number; a file that is not YAML', async () => {
    await writeFile(
      join(dir, 'mixed.yaml'),
      `${yamlOf(crd('kiwis'))}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n`,
    );
    await refused(
      [join(dir, 'mixed.yaml')],
      /crds: .*mixed\.yaml \(document 2\) is v1 ConfigMap, not an apiextensions\.k8s\.io\/v1 CustomResourceDefinition/,
    );
    await writeFile(join(dir, 'broken.yaml'), 'spec: [unclosed\n');
    await refused([join(dir, 'broken.yaml')], /crds: .*broken\.yaml is not YAML or JSON/);
    await refused(
      [{ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: {} }],
      /crds: crds\[0\] lacks metadata\.name/,
    );
  });
});

test("a CRD the apiserver refuses fails start() naming it and the apiserver's words", async () => {
  const bad = crd('quinces', ['v1', 'v2']);
  for (const v of bad.spec.versions) v.storage = true; // two storage versions
  await assert.rejects(start({ nodes: 0, log: () => {}, crds: [bad] }), (err) => {
    assert.ok(isTestenvError(err, 'ApiRequestFailed'), String(err));
    assert.match(
      (err as Error).message,
      /crds: the apiserver refused the CRD quinces\.crds\.example\.com \(from crds\[0\]\): 422 .*storage/,
    );
    return true;
  });
});
