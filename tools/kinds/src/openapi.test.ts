import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Get, KindsGenError, readFromApiserver } from './openapi.ts';
import { type GroupVersion, selectKinds } from './select.ts';

const served: Record<string, unknown> = {
  '/openapi/v3': { paths: { 'api/v1': { serverRelativeURL: '/openapi/v3/api/v1?hash=1' } } },
  '/openapi/v3/api/v1?hash=1': { paths: {}, components: { schemas: {} } },
};
const get: Get = async (path) =>
  path in served ? { status: 200, text: JSON.stringify(served[path]) } : { status: 404, text: 'not found' };

test('the documents are read by the discovery index’s URLs, keyed by discovery path', async () => {
  const docs = await readFromApiserver(get, ['api/v1']);
  assert.deepEqual([...docs.keys()], ['api/v1']);
  assert.deepEqual(docs.get('api/v1'), served['/openapi/v3/api/v1?hash=1']);
});

test('a group version the apiserver does not serve fails naming it', async () => {
  await assert.rejects(
    readFromApiserver(get, ['apis/apps/v1']),
    (err: unknown) => err instanceof KindsGenError && /apis\/apps\/v1/.test(err.message),
  );
});

test('the review groups’ create-only kinds are selected; elsewhere only listable kinds', () => {
  const gvk = (kind: string) => ({ group: 'authorization.k8s.io', version: 'v1', kind });
  const schema = (kind: string) => ({ type: 'object', 'x-kubernetes-group-version-kind': [gvk(kind)] });
  const doc = {
    paths: {
      '/apis/authorization.k8s.io/v1/subjectaccessreviews': {
        post: { 'x-kubernetes-action': 'post', 'x-kubernetes-group-version-kind': gvk('SubjectAccessReview') },
      },
    },
    components: { schemas: { 'io.k8s.api.authorization.v1.SubjectAccessReview': schema('SubjectAccessReview') } },
  };
  const docs = new Map([['apis/authorization.k8s.io/v1', doc]]);
  const gv = (createOnly: boolean): GroupVersion[] => [
    { group: 'authorization.k8s.io', version: 'v1', file: 'authorization', createOnly },
  ];
  assert.deepEqual(
    selectKinds(docs, gv(true)).map((k) => [k.gvk.kind, k.resource]),
    [['SubjectAccessReview', { plural: 'subjectaccessreviews', namespaced: false }]],
  );
  assert.deepEqual(selectKinds(docs, gv(false)), []);
});
