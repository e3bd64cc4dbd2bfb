import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkRoundTrip } from '@opkit/runtime/testing/roundtrip';
import { AppServiceKind } from './appservice.ts';

test('v1alpha1 → v1 → v1alpha1 and v1 → v1alpha1 → v1 are lossless (fuzzed, 300 objects each way)', () => {
  checkRoundTrip(AppServiceKind, { numRuns: 300 });
});

test('v1alpha1 converts to v1 by moving the pod fields under spec.template and maxUnavailable under spec.rollout', () => {
  const v1 = AppServiceKind.convert(
    {
      apiVersion: 'app.example.com/v1alpha1',
      kind: 'AppService',
      metadata: { name: 'web', namespace: 'default', uid: 'u' },
      spec: { replicas: 2, image: 'nginx:1.27', command: ['nginx'], maxUnavailable: 1 },
      status: { replicas: 2 },
    } as never,
    'app.example.com/v1',
  );
  assert.deepEqual(v1, {
    apiVersion: 'app.example.com/v1',
    kind: 'AppService',
    metadata: { name: 'web', namespace: 'default', uid: 'u' },
    spec: { replicas: 2, template: { image: 'nginx:1.27', command: ['nginx'] }, rollout: { maxUnavailable: 1 } },
    status: { replicas: 2 },
  });
});

test('the CRD serves both versions, stores v1 and converts through the webhook', () => {
  const crd = AppServiceKind.crd({ conversion: { service: { namespace: 'ns', name: 'svc' } } });
  assert.deepEqual(
    crd.spec.versions.map((v) => `${v.name}:${v.served}:${v.storage}`),
    ['v1alpha1:true:false', 'v1:true:true'],
  );
  assert.equal(crd.spec.conversion?.strategy, 'Webhook');
});
