import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApiEntry } from '../project/project.ts';
import { kindWebhooksTestFile } from './webhook-templates.ts';

const gadget: ApiEntry = {
  group: 'toys',
  version: 'v1',
  kind: 'Gadget',
  plural: 'gadgets',
  namespaced: true,
  controller: true,
};

test('the scaffolded webhook test has one test per scaffolded webhook, through startTestManager({ webhooks })', () => {
  const both = kindWebhooksTestFile('gadget-operator', gadget, { defaulting: true, validation: true }, false);
  assert.match(both, /^\/\/ scaffolded by opkit/);
  assert.match(both, /import \{ gadgetWebhooks \} from '\.\.\/\.\.\/src\/webhooks\/gadget\.ts';/);
  assert.match(both, /webhooks: \{ admission: gadgetWebhooks\(\) \},/);
  assert.match(both, /name: 'gadget-operator',/);
  assert.equal(both.match(/^test\(/gm)?.length, 2);

  const validating = kindWebhooksTestFile('gadget-operator', gadget, { defaulting: false, validation: true }, false);
  assert.doesNotMatch(validating, /defaulting webhook/);
  assert.match(validating, /refused by the validating webhook/);
  assert.match(validating, /metadata: \{ namespace: 'default', name: 'x'\.repeat\(64\) \}/);
});

test('with --conversion the test manager serves the kind’s conversions too; a cluster-scoped kind has no namespace', () => {
  const cluster = { ...gadget, namespaced: false };
  const text = kindWebhooksTestFile('gadget-operator', cluster, { defaulting: true, validation: false }, true);
  assert.match(text, /webhooks: \{ admission: gadgetWebhooks\(\), conversion: \[Gadgets\] \},/);
  assert.match(text, /metadata: \{ name: 'defaulted' \}/);
});
