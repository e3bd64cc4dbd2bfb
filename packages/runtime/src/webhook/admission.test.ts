import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type KubeObject, resource } from '../client/resource.ts';
import {
  type AdmissionRequest,
  defaulter,
  fieldErrors,
  formatFieldError,
  validationResponse,
  validator,
} from './admission.ts';
import { type Widget, Widgets } from './widgets.fixture.ts';

const ctx = { signal: new AbortController().signal };

function request(operation: AdmissionRequest['operation'], object?: Widget, oldObject?: Widget): AdmissionRequest {
  return {
    uid: 'u-1',
    kind: { group: 'x.example.com', version: 'v1', kind: 'Widget' },
    resource: { group: 'x.example.com', version: 'v1', resource: 'widgets' },
    operation,
    userInfo: { username: 'me' },
    name: 'w',
    namespace: 'ns',
    ...(object ? { object } : {}),
    ...(oldObject ? { oldObject } : {}),
  };
}
const widget = (spec: Widget['spec']): Widget => ({
  apiVersion: 'x.example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w', namespace: 'ns' },
  spec,
});

test('field errors render as Kubernetes renders them', () => {
  assert.equal(
    formatFieldError(fieldErrors.invalid('spec.size', 7, 'must be even')),
    'spec.size: Invalid value: 7: must be even',
  );
  assert.equal(
    formatFieldError(fieldErrors.invalid('spec.color', 'red', 'no')),
    'spec.color: Invalid value: "red": no',
  );
  assert.equal(formatFieldError(fieldErrors.required('spec.color', 'set it')), 'spec.color: Required value: set it');
  assert.equal(
    formatFieldError(fieldErrors.forbidden('metadata.namespace', 'frozen')),
    'metadata.namespace: Forbidden: frozen',
  );
  assert.equal(
    formatFieldError(fieldErrors.notSupported('spec.color', 'red', ['blue', 'green'])),
    'spec.color: Unsupported value: "red": supported values: "blue", "green"',
  );
  assert.equal(formatFieldError(fieldErrors.duplicate('spec.tags[1]', 'a')), 'spec.tags[1]: Duplicate value: "a"');
});

test('the defaulter answers with the JSONPatch of what it changed, and no patch when nothing changed', async () => {
  const h = defaulter(Widgets, (w) => {
    w.spec.size ??= 3;
    w.spec.tags = [...(w.spec.tags ?? []), 'defaulted'];
  });
  const r = await h(request('CREATE', widget({ color: 'blue' })), ctx);
  assert.equal(r.allowed, true);
  assert.equal(r.patchType, 'JSONPatch');
  const patch = JSON.parse(Buffer.from(r.patch ?? '', 'base64').toString()) as unknown[];
  assert.deepEqual(
    patch.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    [
      { op: 'add', path: '/spec/size', value: 3 },
      { op: 'add', path: '/spec/tags', value: ['defaulted'] },
    ],
  );
  const same = defaulter(Widgets, () => {});
  const r2 = await same(request('UPDATE', widget({ size: 1 }), widget({ size: 1 })), ctx);
  assert.deepEqual(r2, { uid: 'u-1', allowed: true });
  const del = await h(request('DELETE', undefined, widget({})), ctx);
  assert.deepEqual(del, { uid: 'u-1', allowed: true }, 'defaulters do not run on delete');
});

test('the defaulter edits a copy: the request object is untouched', async () => {
  const obj = widget({});
  await defaulter(Widgets, (w) => {
    w.spec.size = 9;
  })(request('CREATE', obj), ctx);
  assert.deepEqual(obj.spec, {});
});

test('a validator denies with 422 Invalid naming each field, and passes warnings either way', async () => {
  const h = validator(Widgets, {
    create: (w) => ({
      errors: (w.spec.size ?? 0) % 2 === 1 ? [fieldErrors.invalid('spec.size', w.spec.size, 'must be even')] : [],
      warnings: w.spec.color === undefined ? ['spec.color is not set: widgets are grey'] : [],
    }),
    update: (w, old) =>
      w.spec.color !== old.spec.color
        ? { errors: [fieldErrors.forbidden('spec.color', 'is immutable'), fieldErrors.required('spec.size')] }
        : undefined,
    delete: (old) => ({ warnings: [`deleting ${old.metadata.name}`] }),
  });
  const denied = await h(request('CREATE', widget({ size: 3 })), ctx);
  assert.equal(denied.allowed, false);
  assert.equal(denied.status?.code, 422);
  assert.equal(denied.status?.reason, 'Invalid');
  assert.equal(
    denied.status?.message,
    'Widget.x.example.com "w" is invalid: spec.size: Invalid value: 3: must be even',
  );
  assert.deepEqual(denied.status?.details?.causes, [
    { reason: 'FieldValueInvalid', message: 'Invalid value: 3: must be even', field: 'spec.size' },
  ]);
  assert.deepEqual(denied.warnings, ['spec.color is not set: widgets are grey']);

  const ok = await h(request('CREATE', widget({ size: 2, color: 'blue' })), ctx);
  assert.deepEqual(ok, { uid: 'u-1', allowed: true });

  const two = await h(request('UPDATE', widget({ color: 'red' }), widget({ color: 'blue' })), ctx);
  assert.equal(
    two.status?.message,
    'Widget.x.example.com "w" is invalid: [spec.color: Forbidden: is immutable, spec.size: Required value]',
  );
  const del = await h(request('DELETE', undefined, widget({})), ctx);
  assert.deepEqual(del, { uid: 'u-1', allowed: true, warnings: ['deleting w'] });
});

test('a handler that throws denies with 500 instead of crashing; a request without an object is a 400 denial', async () => {
  const h = validator(Widgets, {
    create: () => {
      throw new Error('lookup failed');
    },
  });
  const r = await h(request('CREATE', widget({})), ctx);
  assert.equal(r.allowed, false);
  assert.equal(r.status?.code, 500);
  assert.match(r.status?.message ?? '', /Widget admission failed: lookup failed/);
  const noObject = await h(request('CREATE'), ctx);
  assert.equal(noObject.status?.code, 400);
});

test('validationResponse uses the core kind name without a group', () => {
  const Pods = resource<KubeObject>({ group: '', version: 'v1', kind: 'Pod', plural: 'pods', namespaced: true });
  const r = validationResponse(Pods, request('CREATE', widget({})), { errors: [fieldErrors.required('spec.x')] });
  assert.equal(r.status?.message, 'Pod "w" is invalid: spec.x: Required value');
});
