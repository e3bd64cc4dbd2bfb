/**
 * `installWebhooks` on a real control plane: with `serve`, nothing is registered before the server answers and the
 * configurations call the port it answers on; a failed write undoes the ones before it; `uninstall` deletes the
 * configurations and puts the CRD's conversion stanza back as it was, once.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Environment, start, TestenvError } from '../src/index.ts';
import { quiet } from './helpers.ts';

const VALIDATING = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';
const CRD = 'widgets.hooks.testenv.opkit.dev';

const configuration = (name: string, webhookName = 'vwidget.hooks.testenv.opkit.dev') => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
  metadata: { name },
  webhooks: [
    {
      name: webhookName,
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      failurePolicy: 'Ignore',
      clientConfig: { service: { namespace: 'default', name: 'widgets-webhook', path: '/validate-widget' } },
      rules: [
        { apiGroups: ['hooks.testenv.opkit.dev'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['widgets'] },
      ],
    },
  ],
});

let env: Environment;
before(async () => {
  env = await start({ nodes: 0, log: quiet });
  await env.api.must({
    method: 'POST',
    path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
    body: {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: CRD },
      spec: {
        group: 'hooks.testenv.opkit.dev',
        names: { kind: 'Widget', plural: 'widgets' },
        scope: 'Namespaced',
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        ],
      },
    },
  });
});
after(async () => {
  await env?.stop();
});

async function exists(name: string): Promise<boolean> {
  return (await env.api.request({ path: `${VALIDATING}/${name}` })).status === 200;
}

async function conversion(): Promise<unknown> {
  const crd = await env.api.must<{ spec: { conversion: unknown } }>({
    path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD}`,
  });
  return crd.spec.conversion;
}

test('with serve: registered only after serve answered, at the port it answered; uninstall restores, once', async () => {
  const original = await conversion();
  let seenDuringServe: boolean | undefined;
  const hooks = await env.installWebhooks({
    configurations: [configuration('widgets-validating')],
    conversions: [CRD],
    serve: async (certificate) => {
      assert.match(certificate.certPem, /BEGIN CERTIFICATE/);
      assert.match(certificate.keyPem, /PRIVATE KEY/);
      seenDuringServe = await exists('widgets-validating');
      return 4321;
    },
  });
  assert.equal(seenDuringServe, false, 'nothing was registered while the server started');
  assert.equal(hooks.port, 4321);
  const got = await env.api.must<{ webhooks: { clientConfig: { url: string; caBundle: string } }[] }>({
    path: `${VALIDATING}/widgets-validating`,
  });
  assert.equal(got.webhooks[0]?.clientConfig.url, 'https://127.0.0.1:4321/validate-widget');
  assert.equal(got.webhooks[0]?.clientConfig.caBundle, Buffer.from(hooks.caPem).toString('base64'));
  assert.deepEqual(await conversion(), {
    strategy: 'Webhook',
    webhook: {
      conversionReviewVersions: ['v1'],
      clientConfig: { url: 'https://127.0.0.1:4321/convert', caBundle: Buffer.from(hooks.caPem).toString('base64') },
    },
  });

  await hooks.uninstall();
  assert.equal(await exists('widgets-validating'), false);
  assert.deepEqual(await conversion(), original, 'the conversion stanza is back as it was');
  await hooks.uninstall(); // a second call does nothing
});

test('a serve that rejects: installWebhooks rejects with its error, nothing registered', async () => {
  const boom = new TestenvError('ComponentFailed', 'the test server did not start');
  await assert.rejects(
    env.installWebhooks({ configurations: [configuration('widgets-never')], serve: () => Promise.reject(boom) }),
    (err: unknown) => err === boom,
  );
  assert.equal(await exists('widgets-never'), false);
});

test('a write that fails undoes the ones before it', async () => {
  const original = await conversion();
  await assert.rejects(
    env.installWebhooks({
      // the second is refused by the apiserver (a webhook name must be a qualified name)
      configurations: [configuration('widgets-first'), configuration('widgets-second', 'not a name')],
      conversions: [CRD],
      port: 4322,
    }),
    (err: unknown) =>
      err instanceof TestenvError && err.code === 'ApiRequestFailed' && /widgets-second/.test(err.message),
  );
  assert.equal(await exists('widgets-first'), false, 'the first configuration was removed again');
  assert.deepEqual(await conversion(), original, 'no conversion was left pointing at the test server');
});
