/**
 * A custom resource that embeds a real job template (`JobTemplateSpecSchema`, as the kubebuilder book's CronJob does),
 * against a real apiserver and the offline validator (@opkit/testenv/cel): the CRD is accepted; `kubectl explain`
 * prints upstream's text inside the template; a template whose `containers` is not a list is refused by both, naming
 * `spec.jobTemplate.spec.template.spec.containers`; labels inside the template survive pruning; a CEL rule over the
 * template's containers is over the cost budget until `withLimits` bounds them; and 240 generated
 * templates, valid and invalid (wrong types, missing required fields, duplicate keys of map lists, bad quantities,
 * unknown fields, defaults), get the same answer from both — allowed or refused, the same causes, the same object
 * stored. The apiserver's writes are server-side dry runs.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { type Environment, resolveBinaries, start } from '@opkit/testenv';
import { loadValidator, type Validator } from '@opkit/testenv/cel';
import { Type } from '@sinclair/typebox';
import { JobTemplateSpecSchema } from '../src/client/schemas/batch.ts';
import { defineKind } from '../src/crd/kind.ts';
import { withLimits } from '../src/crd/limits.ts';
import { Validated } from '../src/crd/rules.ts';
import { cronJob, templates } from './fixtures/pod-templates.ts';
import { waitFor } from './support.ts';

const CronJobs = defineKind({
  group: 'batch.example.com',
  version: 'v1',
  kind: 'CronJob',
  plural: 'cronjobs',
  spec: Type.Object({ schedule: Type.String(), jobTemplate: JobTemplateSpecSchema }),
});
const PATH = '/apis/batch.example.com/v1/namespaces/default/cronjobs';
const TEMPLATES = 240;

interface Outcome {
  readonly allowed: boolean;
  readonly causes?: readonly string[];
  readonly spec?: unknown;
}

/** A refusal's causes as `field: reason`, sorted (the apiserver lists schema errors in Go's map order). */
const causesOf = (causes: readonly { field?: string; reason: string }[] | undefined): string[] =>
  (causes ?? []).map((c) => `${c.field ?? '<nil>'}: ${c.reason}`).sort();

describe('a custom resource embedding a job template', () => {
  let env: Environment;
  let validator: Validator;

  before(async () => {
    [env, validator] = await Promise.all([start({ nodes: 0, log: () => {} }), loadValidator({ log: () => {} })]);
    const created = await env.api.request({
      method: 'POST',
      path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      body: CronJobs.crd(),
    });
    assert.equal(created.status, 201, created.text.slice(0, 500));
    await waitFor('the CRD served', async () => (await env.api.request({ path: PATH })).status === 200, 30_000);
  });
  after(async () => {
    await env?.stop();
  });

  test('the apiserver and the offline validator accept its CRD', () => {
    assert.deepEqual(validator.checkCrd(CronJobs), { ok: true, problems: [] });
  });

  test('a CEL rule over the template: over the cost budget unbounded, accepted with withLimits', () => {
    const rule = {
      rule: "self.spec.template.spec.containers.all(c, c.image.startsWith('registry.example.com/') && c.env.all(e, e.name != 'DEBUG'))",
      message: 'images come from registry.example.com, and no container debugs',
    };
    const kind = (template: typeof JobTemplateSpecSchema) =>
      defineKind({
        group: 'batch.example.com',
        version: 'v1',
        kind: 'Nightly',
        plural: 'nightlies',
        maxDescLen: 0,
        spec: Type.Object({ jobTemplate: Validated(template, [rule]) }),
      });
    const unbounded = validator.checkCrd(kind(JobTemplateSpecSchema));
    assert.equal(unbounded.ok, false);
    assert.match(unbounded.problems[0]?.detail ?? '', /estimated rule cost exceeds budget/);
    const bounded = withLimits(JobTemplateSpecSchema, {
      'spec.template.spec.containers': { maxItems: 8 },
      'spec.template.spec.containers[].image': { maxLength: 256 },
      'spec.template.spec.containers[].env': { maxItems: 32 },
      'spec.template.spec.containers[].env[].name': { maxLength: 128 },
    });
    assert.deepEqual(validator.checkCrd(kind(bounded)), { ok: true, problems: [] });
  });

  test('containers that is not a list is refused by both, naming the field', async () => {
    const object = cronJob('not-a-list');
    (object.spec.jobTemplate.spec.template.spec as Record<string, unknown>).containers = 'not-a-list';
    const field = 'spec.jobTemplate.spec.template.spec.containers';
    const res = await env.api.request<{ message: string }>({
      method: 'POST',
      path: `${PATH}?dryRun=All`,
      body: object,
    });
    assert.equal(res.status, 422);
    assert.ok(res.body.message.includes(`${field}: Invalid value: "string"`), res.body.message);
    const offline = validator.create(CronJobs, object);
    assert.equal(offline.allowed, false);
    assert.deepEqual(
      offline.causes.map((c) => c.field),
      [field],
    );
  });

  test("kubectl explain shows upstream's descriptions inside the template", async () => {
    const kubectl = (await resolveBinaries({ log: () => {} })).kubectl ?? 'kubectl';
    const args = [
      '--kubeconfig',
      env.kubeconfigPath,
      'explain',
      'cronjobs.spec.jobTemplate.spec.template.spec.containers',
    ];
    await waitFor(
      'kubectl explain to know the kind',
      async () => spawnSync(kubectl, args, { encoding: 'utf8' }).status === 0,
      30_000,
    );
    const out = spawnSync(kubectl, args, { encoding: 'utf8' }).stdout;
    assert.match(out, /List of containers belonging to the pod\./);
    assert.match(out, /image\s+<string>/);
  });

  test('labels and annotations inside the template are kept; a creationTimestamp: null is pruned', async () => {
    const object = cronJob('labels');
    (object.spec.jobTemplate.spec.template as { metadata: object }).metadata = {
      labels: { app: 'nightly', 'app.kubernetes.io/name': 'größe' },
      annotations: { note: 'ünïcode ✓' },
      creationTimestamp: null,
    };
    const res = await env.api.request<typeof object>({ method: 'POST', path: `${PATH}?dryRun=All`, body: object });
    assert.equal(res.status, 201, res.text.slice(0, 500));
    assert.deepEqual(res.body.spec.jobTemplate.spec.template.metadata, {
      labels: { app: 'nightly', 'app.kubernetes.io/name': 'größe' },
      annotations: { note: 'ünïcode ✓' },
    });
  });

  test(`${TEMPLATES} generated templates, valid and invalid: the apiserver and the offline validator agree`, async () => {
    const disagreements: string[] = [];
    const tally = { allowed: 0, refused: 0 };
    const causes = new Set<string>();
    for (const [i, object] of templates(TEMPLATES, 7).entries()) {
      const res = await env.api.request<{
        spec?: unknown;
        details?: { causes?: { field?: string; reason: string }[] };
      }>({ method: 'POST', path: `${PATH}?dryRun=All`, body: object });
      const served: Outcome =
        res.status === 201
          ? { allowed: true, spec: res.body.spec }
          : { allowed: false, causes: causesOf(res.body.details?.causes) };
      const r = validator.create(CronJobs, object);
      const offline: Outcome = r.allowed
        ? { allowed: true, spec: (r.object as { spec?: unknown }).spec }
        : { allowed: false, causes: causesOf(r.causes) };
      tally[served.allowed ? 'allowed' : 'refused'] += 1;
      for (const c of served.causes ?? []) causes.add(c.replace(/\[\d+\]/g, '[]'));
      try {
        assert.deepEqual(offline, served);
      } catch {
        disagreements.push(`#${i}: apiserver ${JSON.stringify(served)}, offline ${JSON.stringify(offline)}`);
      }
    }
    assert.deepEqual(disagreements, []);
    assert.ok(tally.allowed >= 40 && tally.refused >= 80, `allowed ${tally.allowed}, refused ${tally.refused}`);
    assert.ok(causes.size >= 12, `only ${causes.size} kinds of refusal: ${[...causes].join(', ')}`);
  });
});
