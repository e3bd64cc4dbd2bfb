import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeRequest, isWrite, requestInfo } from './request-info.ts';

test('resource requests: verb, group, version, resource, subresource, namespace and name from the URL', () => {
  const cases: [string, string, string][] = [
    ['GET', '/api/v1/namespaces/ns/pods', 'list pods in ns'],
    ['GET', '/api/v1/namespaces/ns/pods?watch=true&resourceVersion=5', 'watch pods in ns'],
    ['GET', '/api/v1/pods?watch=1', 'watch pods'],
    ['GET', '/api/v1/namespaces/ns/pods/web-0', 'get pods ns/web-0'],
    ['POST', '/api/v1/namespaces/ns/pods', 'create pods in ns'],
    [
      'PUT',
      '/apis/app.example.com/v1alpha1/namespaces/ns/appservices/app-0/status',
      'update appservices/status ns/app-0',
    ],
    ['PATCH', '/apis/apps/v1/namespaces/ns/deployments/web?fieldManager=op', 'patch deployments ns/web'],
    ['DELETE', '/apis/batch/v1/namespaces/ns/jobs/nightly-1', 'delete jobs ns/nightly-1'],
    ['DELETE', '/api/v1/namespaces/ns/pods', 'deletecollection pods in ns'],
    ['GET', '/api/v1/namespaces', 'list namespaces'],
    ['GET', '/api/v1/namespaces/ns', 'get namespaces ns'],
    ['PUT', '/api/v1/namespaces/ns/finalize', 'update namespaces/finalize ns'],
    ['PUT', '/apis/coordination.k8s.io/v1/namespaces/ops/leases/gadget-operator', 'update leases ops/gadget-operator'],
    ['GET', '/api/v1/namespaces/n%C3%A4me/configmaps/%E2%9C%93', 'get configmaps näme/✓'],
  ];
  for (const [method, url, want] of cases) assert.equal(describeRequest(requestInfo(method, url)), want, url);
  assert.deepEqual(requestInfo('PUT', '/apis/app.example.com/v1alpha1/namespaces/ns/appservices/app-0/status'), {
    verb: 'update',
    group: 'app.example.com',
    version: 'v1alpha1',
    resource: 'appservices',
    subresource: 'status',
    namespace: 'ns',
    name: 'app-0',
  });
  assert.equal(requestInfo('GET', '/api/v1/pods').group, '', 'the core group is ""');
  assert.equal(requestInfo('GET', '/api/v1/pods?limit=1&continue=x').limit, 1, "a list's page size");
  assert.equal(requestInfo('GET', '/api/v1/pods?limit=0').limit, undefined);
  assert.equal(requestInfo('GET', '/api/v1/pods?watch=1&limit=5').limit, undefined, 'a watch has no pages');
});

test('other paths have no resource; their verb is the method', () => {
  for (const url of ['/healthz', '/version', '/apis', '/apis/apps/v1', '/api/v1', '/openapi/v3'])
    assert.deepEqual(requestInfo('GET', url), { verb: 'get' }, url);
});

test('writes: create, update, patch, delete and deletecollection', () => {
  assert.deepEqual(
    ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'].filter(isWrite),
    ['create', 'update', 'patch', 'delete', 'deletecollection'],
  );
});
