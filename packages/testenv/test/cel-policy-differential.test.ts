/**
 * The offline validator's `evaluatePolicy` against the real apiserver: a ValidatingAdmissionPolicy with params, a match
 * condition, a variable, message expressions, reasons, a transition check and an audit annotation (fixtures/
 * cel-corpus.ts) decides the same generated creates and updates through both, and every answer must be the same:
 * allowed or refused, and the refusal's message, reason, code and causes. Writes to the apiserver are server-side dry
 * runs, except the old objects of updates. `checkPolicy` is held to the apiserver's refusal of broken policies.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { KindRef, PolicyAdmission, Validator } from '../src/cel.ts';
import type { Environment } from '../src/index.ts';
import { BINDING, CRD, GROUP, KIND, PLURAL, POLICY, probe } from './fixtures/cel-corpus.ts';
import { policyEnvironment } from './fixtures/cel-env.ts';

const CREATES = 500;
const UPDATES = 150;
const PATH = `/apis/${GROUP}/v1/namespaces/default/${PLURAL}`;
const PROBES: KindRef = { group: GROUP, version: 'v1', kind: KIND, plural: PLURAL, namespaced: true };
const CONFIGMAPS: KindRef = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };

type Obj = Record<string, unknown> & { metadata: Record<string, unknown>; spec?: Record<string, unknown> };
interface Outcome {
  readonly allowed: boolean;
  readonly message?: string | undefined;
  readonly reason?: string | undefined;
  readonly code?: number | undefined;
  readonly causes?: unknown;
}

function served(res: { status: number; body: unknown }): Outcome {
  if (res.status === 200 || res.status === 201) return { allowed: true };
  const b = res.body as { message?: string; reason?: string; code?: number; details?: { causes?: unknown } };
  return { allowed: false, message: b.message, reason: b.reason, code: b.code, causes: b.details?.causes };
}

function offline(r: PolicyAdmission): Outcome {
  if (r.allowed) return { allowed: true };
  const s = r.status;
  return { allowed: false, message: s?.message, reason: s?.reason, code: s?.code, causes: s?.details?.causes };
}

describe('evaluatePolicy agrees with the apiserver', () => {
  let env: Environment;
  let v: Validator;
  let namespace: object;
  let limits: object;
  const disagreements: unknown[] = [];
  const tally = { allowed: 0, refused: 0 };
  const seen = new Set<string>();

  const compare = (what: string, request: unknown, a: Outcome, b: Outcome) => {
    tally[a.allowed ? 'allowed' : 'refused'] += 1;
    if (a.message) seen.add(a.message);
    try {
      assert.deepEqual(b, a);
    } catch {
      disagreements.push({ what, request, apiserver: a, offline: b });
    }
  };

  before(async () => {
    ({
      env,
      v,
      namespace,
      configMap: limits,
    } = await policyEnvironment({
      configMap: { metadata: { name: 'limits' }, data: { maxReplicas: '50' } },
      policy: POLICY,
      binding: BINDING,
      plural: 'validatingadmissionpolicies',
      probe: { metadata: { name: 'busy' }, spec: { replicas: 1, image: 'busybox' } },
      enforced: (res) => res.status !== 201,
    }));
  });
  after(async () => {
    await env?.stop();
  });

  /** What the policy sees: the object as the apiserver stores it (pruned, defaulted), if the CRD accepts it. */
  const stored = (object: object) => {
    const r = v.create(CRD, object);
    return r.allowed ? (r.object as Obj) : undefined;
  };

  test(`${CREATES} creates that the CRD accepts: the same decision from both`, async () => {
    let done = 0;
    for (const [i, object] of fc.sample(probe, { numRuns: CREATES * 3, seed: 40 }).entries()) {
      if (done === CREATES) break;
      const o = stored(object);
      if (!o) continue;
      if (i % 11 === 0) o.metadata.labels = { skip: 'yes' };
      const res = await env.api.request({ method: 'POST', path: `${PATH}?dryRun=All`, body: o });
      const params = { kind: CONFIGMAPS, objects: [limits] };
      compare(
        `create #${i}`,
        o,
        served(res),
        offline(
          v.evaluatePolicy(
            { policy: POLICY, binding: BINDING },
            { operation: 'CREATE', kind: PROBES, object: o, namespace, params },
          ),
        ),
      );
      done += 1;
    }
    assert.equal(done, CREATES);
    assert.deepEqual(disagreements.slice(0, 3), [], `${disagreements.length} disagreements`);
  });

  test(`${UPDATES} updates: the same decision from both`, async () => {
    let done = 0;
    const pairs = fc.sample(fc.tuple(probe, probe), { numRuns: UPDATES * 10, seed: 41 });
    for (const [i, [first, second]] of pairs.entries()) {
      if (done === UPDATES) break;
      const name = `u${i}`;
      const old = stored({
        ...first,
        metadata: { name },
        spec: { ...(first.spec as Obj), image: 'nginx', replicas: 1 },
      });
      if (!old) continue;
      const created = await env.api.request<Obj>({ method: 'POST', path: PATH, body: old });
      if (created.status !== 201) continue;
      // the CRD's own rules keep the image and the memory (transition rules): the policy sees only what they allow
      const spec = { ...(second.spec as Obj), image: 'nginx' } as Obj;
      if (old.spec?.memory === undefined) delete spec.memory;
      else spec.memory = old.spec.memory;
      const meta = { name, resourceVersion: created.body.metadata.resourceVersion };
      const update = v.update(CRD, { ...second, spec, metadata: meta }, created.body);
      if (!update.allowed) continue;
      const next = update.object as Obj;
      const res = await env.api.request({ method: 'PUT', path: `${PATH}/${name}?dryRun=All`, body: next });
      const request = {
        operation: 'UPDATE',
        kind: PROBES,
        object: next,
        oldObject: created.body,
        namespace,
        params: { kind: CONFIGMAPS, objects: [limits] },
      } as const;
      compare(
        `update #${i}`,
        request,
        served(res),
        offline(v.evaluatePolicy({ policy: POLICY, binding: BINDING }, request)),
      );
      done += 1;
    }
    assert.equal(done, UPDATES, 'enough updates');
    assert.deepEqual(disagreements.slice(0, 3), [], `${disagreements.length} disagreements`);
  });

  test('both answers are reached, and every validation refuses some write', () => {
    assert.ok(tally.allowed > 100 && tally.refused > 100, JSON.stringify(tally));
    const all = [...seen].join('\n');
    for (const m of [
      'over 50',
      'tags: at most 6 characters each',
      'no busybox here',
      'mode is set once',
      'replicas×10⁶ = 27000000',
    ])
      assert.ok(all.includes(m), `no write refused with "${m}"`);
  });

  test('checkPolicy: a broken expression is refused by the apiserver and found offline, at the same field', async () => {
    const broken = structuredClone(POLICY) as unknown as {
      metadata: { name: string };
      spec: { validations: { expression: string }[] };
    };
    broken.metadata.name = 'broken';
    broken.spec.validations = [{ expression: 'object.spec.replicas +' }];
    const res = await env.api.request<{ message: string }>({
      method: 'POST',
      path: '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies?dryRun=All',
      body: broken,
    });
    assert.equal(res.status, 422, res.text);
    const check = v.checkPolicy(broken, [CRD]);
    assert.equal(check.ok, false);
    assert.equal(check.problems[0]?.field, 'spec.validations[0].expression');
    assert.ok(res.body.message.includes('spec.validations[0].expression'), res.body.message);
    // a typo in a field name compiles (the apiserver accepts the policy) but does not type-check against the CRD
    const typo = structuredClone(POLICY) as unknown as { spec: { validations: { expression: string }[] } };
    typo.spec.validations = [{ expression: 'object.spec.replicass <= 3' }];
    const found = v.checkPolicy(typo, [CRD]).problems;
    assert.deepEqual(
      found.map((p) => [p.field, p.typeCheck]),
      [['spec.validations[0].expression', true]],
    );
    assert.match(found[0]?.detail ?? '', /undefined field 'replicass'/);
    // metadata is all of ObjectMeta, as the apiserver resolves the kind from the CRD's published OpenAPI
    typo.spec.validations = [{ expression: "object.metadata.?labels.app.orValue('') != 'x'" }];
    assert.deepEqual(v.checkPolicy(typo, [CRD]).problems, []);
  });
});
