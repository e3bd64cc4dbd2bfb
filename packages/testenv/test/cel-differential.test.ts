/**
 * The offline validator (`@opkit/testenv/cel`) against the real apiserver: the same generated objects (fixtures/
 * cel-corpus.ts: every Kubernetes CEL library a CRD rule may use, schema errors, pruning, defaults) are created and
 * updated through both, and every answer must be the same: allowed or refused, the 422's message and causes, and the
 * object as stored. Writes to the apiserver are server-side dry runs, except the old objects of updates.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { loadValidator, type Validator } from '../src/cel.ts';
import { type Environment, start } from '../src/index.ts';
import { CRD, GROUP, PLURAL, probe, SPEC_RULES } from './fixtures/cel-corpus.ts';
import { quiet, waitFor } from './helpers.ts';

const CREATES = 1000;
const UPDATES = 200;
const PATH = `/apis/${GROUP}/v1/namespaces/default/${PLURAL}`;

type Obj = Record<string, unknown> & { metadata: Record<string, unknown>; spec?: unknown; status?: unknown };

interface Outcome {
  readonly allowed: boolean;
  readonly message?: string;
  readonly causes?: unknown;
  readonly spec?: unknown;
  readonly status?: unknown;
  readonly metadata?: unknown;
}

/**
 * A refusal's message and causes in a stable order. The apiserver lists the OpenAPI schema's errors in Go's map order,
 * which differs from one request to the next (the same object sent twice can list them differently), so both sides are
 * sorted: the set of errors must be equal, and each error's text.
 */
function refusal(
  code: number | undefined,
  message: string | undefined,
  causes: readonly unknown[] | undefined,
): Outcome {
  const m = /^(.*? is invalid: )\[(.*)\]$/s.exec(message ?? '');
  const sorted = (causes ?? []).map((c) => JSON.stringify(c)).sort();
  return {
    allowed: false,
    message: `${code} ${
      m
        ? `${m[1]}[${splitErrors(m[2] as string)
            .sort()
            .join(', ')}]`
        : message
    }`,
    causes: sorted,
  };
}

/** The errors of an aggregate message `a, b, c`: split at each ", <field>: " that starts the next error. */
function splitErrors(list: string): string[] {
  return list.split(/, (?=(?:[\w.[\]<>-]+|<nil>): )/);
}

/** What the apiserver sets in metadata on its own (random or server-side), left out of the comparison. */
const SERVER_SET = new Set(['uid', 'creationTimestamp', 'resourceVersion', 'managedFields']);
const metadataOf = (m: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(m).filter(([k]) => !SERVER_SET.has(k)));

/** The apiserver's answer, reduced to what the validator also decides. */
function served(res: { status: number; body: unknown }): Outcome {
  const body = res.body as Obj & { message?: string; details?: { causes?: unknown } };
  if (res.status === 200 || res.status === 201) {
    return { allowed: true, spec: body.spec, status: body.status, metadata: metadataOf(body.metadata) };
  }
  return refusal(res.status, body.message, body.details?.causes as unknown[] | undefined);
}

function offline(r: ReturnType<Validator['create']>): Outcome {
  if (r.allowed) {
    const o = r.object as Obj;
    return { allowed: true, spec: o.spec, status: o.status, metadata: metadataOf(o.metadata) };
  }
  return refusal(r.status?.code, r.status?.message, r.status?.details.causes);
}

describe('the offline validator agrees with the apiserver', () => {
  let env: Environment;
  let validator: Validator;
  const disagreements: { what: string; object: unknown; apiserver: Outcome; offline: Outcome }[] = [];
  const tally = { allowed: 0, refused: 0 };
  const seen = new Set<string>();

  const compare = (what: string, object: unknown, a: Outcome, b: Outcome) => {
    tally[a.allowed ? 'allowed' : 'refused'] += 1;
    for (const c of (a.causes as string[] | undefined) ?? []) seen.add(c);
    try {
      assert.deepEqual(b, a);
    } catch {
      disagreements.push({ what, object, apiserver: a, offline: b });
    }
  };

  before(async () => {
    [env, validator] = await Promise.all([start({ nodes: 0, log: quiet }), loadValidator({ log: quiet })]);
    const created = await env.api.request({
      method: 'POST',
      path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      body: CRD,
    });
    assert.equal(created.status, 201, created.text);
    await waitFor('the CRD served', async () => (await env.api.request({ path: PATH })).status === 200, 30_000);
  });
  after(async () => {
    await env?.stop();
  });

  test('checkCrd accepts the corpus CRD, as the apiserver did', () => {
    assert.deepEqual(validator.checkCrd(CRD), { ok: true, problems: [] });
  });

  test("a CRD with a broken rule: checkCrd gives the apiserver's refusal, word for word", async () => {
    const broken = {
      typo: { rule: 'self.replicass > 0' },
      'type error': { rule: "self.replicas + 'x' == '1'" },
      'over the cost budget': { rule: "self.free.all(a, self.free.all(b, a != b + 'x'))" },
      'messageExpression not a string': { rule: 'true', messageExpression: 'self.replicas' },
      'reason not allowed': { rule: 'true', reason: 'FieldValueTooLong' },
    };
    for (const [what, rule] of Object.entries(broken)) {
      const crd = structuredClone(CRD) as unknown as {
        metadata: { name: string };
        spec: {
          names: Record<string, string>;
          versions: [{ schema: { openAPIV3Schema: { properties: { spec: Record<string, unknown> } } } }];
        };
      };
      const plural = `broken${Object.keys(broken).indexOf(what)}`;
      crd.spec.names = { kind: 'Broken', listKind: 'BrokenList', plural, singular: 'broken' };
      crd.metadata.name = `${plural}.${GROUP}`;
      const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
      spec['x-kubernetes-validations'] = [rule];
      // a list with no maxItems of strings with no maxLength: the cost estimate assumes the 3 MiB request limit
      (spec.properties as Record<string, unknown>).free = { type: 'array', items: { type: 'string' } };
      const res = await env.api.request<{ message: string }>({
        method: 'POST',
        path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All',
        body: crd,
      });
      const check = validator.checkCrd(crd);
      assert.equal(res.status, 422, `${what}: the apiserver refuses it`);
      assert.equal(check.ok, false, what);
      assert.equal(check.status?.message, res.body.message, what);
      const [first] = check.problems;
      assert.deepEqual([first?.schemaPath, first?.rule], ['spec', rule.rule], `${what}: located at the rule`);
    }
  });

  test(`${CREATES} creates: the same answer from both`, async () => {
    for (const [i, object] of fc.sample(probe, { numRuns: CREATES, seed: 30 }).entries()) {
      const res = await env.api.request({ method: 'POST', path: `${PATH}?dryRun=All`, body: object });
      compare(`create #${i}`, object, served(res), offline(validator.create(CRD, object)));
    }
    assert.deepEqual(disagreements.slice(0, 3), [], `${disagreements.length} disagreements of ${CREATES}`);
  });

  test(`${UPDATES} updates, with transition rules and ratcheting: the same answer from both`, async () => {
    const pairs = fc.sample(fc.tuple(probe, probe, fc.boolean()), { numRuns: UPDATES * 3, seed: 31 });
    let done = 0;
    for (const [i, [first, second, sameImage]] of pairs.entries()) {
      if (done === UPDATES) break;
      const name = `u${i}`;
      const old = { ...first, metadata: { name } };
      const stored = await env.api.request<Obj>({ method: 'POST', path: PATH, body: old });
      if (stored.status !== 201) continue; // an update needs an object the apiserver stored
      const spec = { ...(second.spec as Obj), ...(sameImage ? { image: (first.spec as Obj).image } : {}) };
      const next = { ...second, spec, metadata: { name, resourceVersion: stored.body.metadata.resourceVersion } };
      const res = await env.api.request({ method: 'PUT', path: `${PATH}/${name}?dryRun=All`, body: next });
      compare(`update #${i}`, { old, next }, served(res), offline(validator.update(CRD, next, stored.body)));
      done += 1;
    }
    assert.equal(done, UPDATES, 'enough stored objects to update');
    assert.deepEqual(disagreements.slice(0, 3), [], `${disagreements.length} disagreements`);
  });

  test('updates without a resourceVersion (absent, empty or "0"): the same 422 from both', async () => {
    let done = 0;
    for (const [i, [first, second]] of fc.sample(fc.tuple(probe, probe), { numRuns: 40, seed: 34 }).entries()) {
      const name = `norv${i}`;
      const stored = await env.api.request<Obj>({ method: 'POST', path: PATH, body: { ...first, metadata: { name } } });
      if (stored.status !== 201) continue;
      for (const metadata of [{ name }, { name, resourceVersion: '' }, { name, resourceVersion: '0' }]) {
        const next = { ...second, metadata };
        const res = await env.api.request<{ reason?: string; details?: unknown }>({
          method: 'PUT',
          path: `${PATH}/${name}?dryRun=All`,
          body: next,
        });
        const update = validator.update(CRD, next, stored.body);
        compare(`update without resourceVersion #${i}`, next, served(res), offline(update));
        // the rest of the Status too: its reason and details (the resource, not the kind, qualifies the name)
        const what = `update #${i} with ${JSON.stringify(metadata)}`;
        assert.deepEqual([update.status?.reason, update.status?.details], [res.body.reason, res.body.details], what);
      }
      done += 1;
    }
    assert.ok(done >= 10, `${done} stored objects to update`);
    assert.deepEqual(disagreements.slice(0, 3), [], `${disagreements.length} disagreements`);
  });

  test('a cluster-scoped kind and generateName: the same answer from both', async () => {
    const cluster = structuredClone(CRD) as unknown as {
      metadata: { name: string };
      spec: { scope: string; names: Record<string, string> };
    };
    cluster.spec.scope = 'Cluster';
    cluster.spec.names = {
      kind: 'ClusterProbe',
      listKind: 'ClusterProbeList',
      plural: 'clusterprobes',
      singular: 'clusterprobe',
    };
    cluster.metadata.name = `clusterprobes.${GROUP}`;
    const made = await env.api.request({
      method: 'POST',
      path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      body: cluster,
    });
    assert.equal(made.status, 201, made.text);
    const path = `/apis/${GROUP}/v1/clusterprobes`;
    await waitFor(
      'the cluster-scoped CRD served',
      async () => (await env.api.request({ path })).status === 200,
      30_000,
    );
    for (const [i, object] of fc.sample(probe, { numRuns: 100, seed: 32 }).entries()) {
      const o = { ...object, kind: 'ClusterProbe' };
      const res = await env.api.request({ method: 'POST', path: `${path}?dryRun=All`, body: o });
      compare(`cluster-scoped create #${i}`, o, served(res), offline(validator.create(cluster, o)));
    }
    // generateName: the name is random on both sides, so the allowed objects are compared without it
    const unnamed = (x: Outcome) =>
      x.allowed
        ? { ...x, metadata: { ...(x.metadata as object), name: undefined } }
        : { ...x, message: (x.message ?? '').replace(/"gen-[a-z0-9]{5}"/, '"gen-?????"') };
    for (const [i, object] of fc.sample(probe, { numRuns: 50, seed: 33 }).entries()) {
      const { name: _name, ...meta } = object.metadata;
      const o = { ...object, metadata: { ...meta, generateName: 'gen-' } };
      const a = served(await env.api.request({ method: 'POST', path: `${PATH}?dryRun=All`, body: o }));
      compare(`generateName create #${i}`, o, unnamed(a), unnamed(offline(validator.create(CRD, o))));
    }
    assert.deepEqual(disagreements.slice(0, 3), [], `${disagreements.length} disagreements`);
  });

  test('the corpus reaches both answers, and every rule refuses some object', () => {
    assert.ok(tally.allowed > 300 && tally.refused > 300, JSON.stringify(tally));
    const texts = [...seen].join('\n');
    const expected = [
      ...SPEC_RULES.map((r) => ('message' in r ? r.message : 'minReplicas exceeds replicas')),
      'memory abc is over 64Gi',
      'image is immutable',
      'memory may be set, not changed',
      'name: at most 40 characters',
    ];
    assert.deepEqual(
      expected.filter((m) => !texts.includes(m)),
      [],
      'rules that refused no object',
    );
  });
});
