/**
 * The offline validator's `evaluateMutatingPolicy` against the real apiserver: a MutatingAdmissionPolicy with params,
 * a match condition, a variable, apply configurations and JSON patches (fixtures/cel-corpus.ts) mutates the same
 * generated creates and updates through both, and every answer must be the same: refused (the same message, reason
 * and code), or stored with the same spec, labels and annotations. Offline, a write is what a user composes: `create`
 * (the object as decoded), `evaluateMutatingPolicy`, then `create` or `update` again (the schema and rules after the
 * mutation). Writes to the apiserver are server-side dry runs, except the old objects of updates. `checkPolicy` is
 * held to the apiserver's refusal of a broken policy.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { KindRef, Validator } from '../src/cel.ts';
import type { Environment } from '../src/index.ts';
import { CRD, GROUP, KIND, MUTATING_BINDING, MUTATING_POLICY, PLURAL, probe } from './fixtures/cel-corpus.ts';
import { policyEnvironment } from './fixtures/cel-env.ts';
import { waitFor } from './helpers.ts';

const CREATES = 300;
const UPDATES = 80;
const PATH = `/apis/${GROUP}/v1/namespaces/default/${PLURAL}`;
const PROBES: KindRef = { group: GROUP, version: 'v1', kind: KIND, plural: PLURAL, namespaced: true };
const CONFIGMAPS: KindRef = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const PAIR = { policy: MUTATING_POLICY, binding: MUTATING_BINDING };

type Obj = Record<string, unknown> & { metadata: Record<string, unknown>; spec?: Record<string, unknown> };
interface Outcome {
  readonly allowed: boolean;
  readonly stored?: unknown;
  readonly message?: string | undefined;
  readonly reason?: string | undefined;
  readonly code?: number | undefined;
}

/** What is compared of a stored object: what the policy and the schema decide. */
const storedOf = (o: Obj) => ({
  spec: o.spec,
  labels: o.metadata.labels,
  annotations: o.metadata.annotations,
});

function served(res: { status: number; body: unknown }): Outcome {
  if (res.status === 200 || res.status === 201) return { allowed: true, stored: storedOf(res.body as Obj) };
  const b = res.body as { message?: string; reason?: string; code?: number };
  return { allowed: false, message: b.message, reason: b.reason, code: b.code };
}

describe('evaluateMutatingPolicy agrees with the apiserver', () => {
  let env: Environment;
  let v: Validator;
  let namespace: object;
  let params: { kind: KindRef; objects: object[] };
  const disagreements: unknown[] = [];
  const tally = { mutated: 0, skipped: 0, refused: 0, invalid: 0 };

  /** The offline write: decoded as stored, mutated, then admitted again by the schema and the CRD's rules. */
  const offline = (object: Obj, old?: Obj): Outcome => {
    const m = v.evaluateMutatingPolicy(PAIR, {
      operation: old ? 'UPDATE' : 'CREATE',
      kind: PROBES,
      object,
      ...(old ? { oldObject: old } : {}),
      namespace,
      params,
      crd: CRD,
    });
    if (!m.allowed) {
      tally.refused += 1;
      return { allowed: false, message: m.status?.message, reason: m.status?.reason, code: m.status?.code };
    }
    tally[m.mutated ? 'mutated' : 'skipped'] += 1;
    const next = m.object as Obj;
    const r = old ? v.update(CRD, next, old) : v.create(CRD, next);
    if (!r.allowed) {
      tally.invalid += 1;
      return { allowed: false, message: r.status?.message, reason: r.status?.reason, code: r.status?.code };
    }
    return { allowed: true, stored: storedOf(r.object as Obj) };
  };

  const compare = (what: string, request: unknown, a: Outcome, b: Outcome) => {
    try {
      assert.deepEqual(b, a);
    } catch {
      disagreements.push({ what, request, apiserver: a, offline: b });
    }
  };

  before(async () => {
    let configMap: object;
    ({ env, v, namespace, configMap } = await policyEnvironment({
      configMap: { metadata: { name: 'mutation' }, data: { cap: '60', team: 'team-a', note: 'ünïcode ✓ — 日本' } },
      policy: MUTATING_POLICY,
      binding: MUTATING_BINDING,
      plural: 'mutatingadmissionpolicies',
      probe: { metadata: { name: 'plain' }, spec: { replicas: 1, image: 'nginx' } },
      enforced: (res) => res.status === 201 && (res.body as Obj).metadata.labels?.['mutated' as never] === 'yes',
    }));
    params = { kind: CONFIGMAPS, objects: [configMap] };
  });
  after(async () => {
    await env?.stop();
  });

  const stored = (object: object) => {
    const r = v.create(CRD, object);
    return r.allowed ? (r.object as Obj) : undefined;
  };

  test(`${CREATES} creates that the CRD accepts: the same outcome from both`, async () => {
    let done = 0;
    for (const [i, object] of fc.sample(probe, { numRuns: CREATES * 4, seed: 50 }).entries()) {
      if (done === CREATES) break;
      const o = stored(object);
      if (!o) continue;
      if (i % 11 === 0) o.metadata.labels = { ...(o.metadata.labels as object), skip: 'yes' };
      const res = await env.api.request({ method: 'POST', path: `${PATH}?dryRun=All`, body: o });
      compare(`create #${i}`, o, served(res), offline(o));
      done += 1;
    }
    assert.equal(done, CREATES);
    assert.deepEqual(disagreements.slice(0, 3), [], `${disagreements.length} disagreements`);
  });

  test(`${UPDATES} updates: the same outcome from both`, async () => {
    let done = 0;
    const pairs = fc.sample(fc.tuple(probe, probe), { numRuns: UPDATES * 10, seed: 51 });
    for (const [i, [first, second]] of pairs.entries()) {
      if (done === UPDATES) break;
      const name = `u${i}`;
      const created = await env.api.request<Obj>({
        method: 'POST',
        path: PATH,
        body: { ...first, metadata: { name }, spec: { ...(first.spec as Obj), image: 'nginx', replicas: 1 } },
      });
      if (created.status !== 201) continue;
      // the CRD's own rules keep the image and the memory (transition rules): the policy sees only what they allow
      const spec = { ...(second.spec as Obj), image: 'nginx' } as Obj;
      const oldSpec = created.body.spec as Obj;
      if (oldSpec.memory === undefined) delete spec.memory;
      else spec.memory = oldSpec.memory;
      const meta = { name, resourceVersion: created.body.metadata.resourceVersion };
      const update = v.update(CRD, { ...second, spec, metadata: meta }, created.body);
      if (!update.allowed) continue;
      const next = update.object as Obj;
      const res = await env.api.request({ method: 'PUT', path: `${PATH}/${name}?dryRun=All`, body: next });
      compare(`update #${i}`, next, served(res), offline(next, created.body));
      done += 1;
    }
    assert.equal(done, UPDATES, 'enough updates');
    assert.deepEqual(disagreements.slice(0, 3), [], `${disagreements.length} disagreements`);
  });

  test('each path is taken: mutated, skipped by a match condition, refused by an expression error or by the schema after', () => {
    assert.ok(
      tally.mutated > 100 && tally.skipped > 10 && tally.refused > 10 && tally.invalid > 5,
      JSON.stringify(tally),
    );
  });

  test('built-in kinds: a sidecar merged into a Deployment by container name, labels into a ConfigMap, as the apiserver merges them', async () => {
    const sidecar = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingAdmissionPolicy',
      metadata: { name: 'sidecar' },
      spec: {
        reinvocationPolicy: 'Never',
        matchConstraints: {
          resourceRules: [
            { apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['deployments'] },
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] },
          ],
        },
        mutations: [
          {
            patchType: 'ApplyConfiguration',
            applyConfiguration: {
              expression:
                "object.kind == 'Deployment' ? Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: 'proxy', image: 'proxy:1'}]}}}} : Object{metadata: Object.metadata{labels: {'seen': 'yes'}}}",
            },
          },
        ],
      },
    };
    const binding = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingAdmissionPolicyBinding',
      metadata: { name: 'sidecar-binding' },
      spec: { policyName: 'sidecar' },
    };
    for (const [o, plural] of [
      [sidecar, 'mutatingadmissionpolicies'],
      [binding, 'mutatingadmissionpolicybindings'],
    ] as const) {
      const r = await env.api.request({
        method: 'POST',
        path: `/apis/admissionregistration.k8s.io/v1/${plural}`,
        body: o,
      });
      assert.equal(r.status, 201, r.text);
    }
    const DEPLOYMENTS: KindRef = {
      group: 'apps',
      version: 'v1',
      kind: 'Deployment',
      plural: 'deployments',
      namespaced: true,
    };
    const containers = (names: string[]) => names.map((name) => ({ name, image: `${name}:2` }));
    const deployment = (name: string, names: string[]) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: 'default' },
      spec: {
        selector: { matchLabels: { app: name } },
        template: { metadata: { labels: { app: name } }, spec: { containers: containers(names) } },
      },
    });
    const cases = [
      ['apps/v1', 'deployments', DEPLOYMENTS, deployment('one', ['main'])],
      ['apps/v1', 'deployments', DEPLOYMENTS, deployment('two', ['main', 'proxy'])],
      ['apps/v1', 'deployments', DEPLOYMENTS, deployment('three', ['a', 'b', 'c'])],
      [
        'v1',
        'configmaps',
        CONFIGMAPS,
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'c', namespace: 'default', labels: { a: 'b' } },
          data: { k: 'ünï' },
        },
      ],
    ] as const;
    const pick = (o: Obj) => ({
      labels: o.metadata.labels,
      containers: (
        o.spec as { template?: { spec: { containers: { name: string; image: string }[] } } } | undefined
      )?.template?.spec.containers.map((c) => `${c.name}=${c.image}`),
    });
    for (const [apiVersion, plural, kind, object] of cases) {
      const path = `/${apiVersion === 'v1' ? 'api' : 'apis'}/${apiVersion}/namespaces/default/${plural}?dryRun=All`;
      let res = { status: 0, body: {} as Obj };
      await waitFor(
        'the policy enforced',
        async () => {
          res = await env.api.request<Obj>({ method: 'POST', path, body: object });
          return (
            res.status === 201 && JSON.stringify(pick(res.body)) !== JSON.stringify(pick(object as unknown as Obj))
          );
        },
        60_000,
      );
      const m = v.evaluateMutatingPolicy(
        { policy: sidecar, binding },
        { operation: 'CREATE', kind, object, namespace },
      );
      assert.equal(m.allowed, true, JSON.stringify(m.status));
      assert.deepEqual(pick(m.object as Obj), pick(res.body), object.metadata.name);
    }
  });

  test('params absent: none exist, of the kind a definition names; a policy as JSON must say which kind', () => {
    const allow = structuredClone(MUTATING_BINDING) as unknown as {
      spec: { paramRef: { parameterNotFoundAction: string } };
    };
    allow.spec.paramRef.parameterNotFoundAction = 'Allow';
    const object = stored({
      apiVersion: `${GROUP}/v1`,
      kind: KIND,
      metadata: { name: 'p' },
      spec: { replicas: 1, image: 'nginx' },
    });
    // a definePolicy / defineMutatingPolicy result carries its definition, whose params name the kind
    const defined = { definition: { params: { kind: CONFIGMAPS } }, manifests: () => [MUTATING_POLICY, allow] };
    const r = v.evaluateMutatingPolicy(defined, {
      operation: 'CREATE',
      kind: PROBES,
      object: object as object,
      crd: CRD,
    });
    assert.equal(r.allowed, true, JSON.stringify(r.status));
    assert.equal(r.mutated, false, 'no params, Allow: the policy does not run');
    assert.throws(
      () =>
        v.evaluateMutatingPolicy(
          { policy: MUTATING_POLICY, binding: allow },
          { operation: 'CREATE', kind: PROBES, object: object as object, crd: CRD },
        ),
      /the policy's params are ConfigMap objects: pass request\.params/,
    );
  });

  test('checkPolicy: what the apiserver takes type-checks, what it refuses at run time does not', () => {
    type Mutation = {
      patchType: string;
      applyConfiguration?: { expression: string };
      jsonPatch?: { expression: string };
    };
    const withMutations = (...expressions: string[]) => {
      const p = structuredClone(MUTATING_POLICY) as unknown as { spec: { mutations: Mutation[] } };
      p.spec.mutations = expressions.map((expression) => ({
        patchType: 'ApplyConfiguration',
        applyConfiguration: { expression },
      }));
      return p;
    };
    // a CRD that declares metadata (as defineKind's do): Object.metadata is still all of ObjectMeta
    const declared = structuredClone(CRD) as unknown as {
      spec: { versions: { schema: { openAPIV3Schema: { properties: Record<string, object> } } }[] };
    };
    const root = declared.spec.versions[0]?.schema.openAPIV3Schema;
    if (root) root.properties.metadata = { type: 'object' };
    // values that convert to an object field: a typed field of the object, a map literal, a filtered list
    const fine = withMutations(
      'Object{metadata: Object.metadata{labels: {"a": "b"}, annotations: {"n": "ü"}}}',
      'Object{status: object.status}',
      'Object{status: {"ready": true}}',
      'Object{spec: Object.spec{ports: object.spec.ports.filter(p, p.port > 1), labels: object.spec.labels}}',
      'Object{spec: Object.spec{?minReplicas: optional.of(1)}}',
    );
    assert.deepEqual(v.checkPolicy(fine, [declared]).problems, []);
    // a nested literal named other than its field's path: the apiserver refuses it at run time
    const misnamed = withMutations('Object{spec: Object.spec{ports: [Object.spec.port{name: "x", port: 1}]}}');
    const found = v.checkPolicy(misnamed, [CRD]).problems;
    assert.deepEqual(
      found.map((p) => [p.field, p.typeCheck]),
      [['spec.mutations[0].applyConfiguration.expression', true]],
    );
    assert.match(
      found[0]?.detail ?? '',
      /Object\.spec\.port\{…\} is set as spec\.ports: its type must be Object\.spec\.ports\{…\}/,
    );
    // no reinvocationPolicy (it has no default), a patchType without its body: refused as the apiserver refuses them
    const bare = structuredClone(MUTATING_POLICY) as unknown as {
      spec: { reinvocationPolicy?: string; mutations: Mutation[] };
    };
    delete bare.spec.reinvocationPolicy;
    bare.spec.mutations = [{ patchType: 'JSONPatch', applyConfiguration: { expression: 'Object{}' } }];
    assert.deepEqual(
      v.checkPolicy(bare, [CRD]).problems.map((p) => p.field),
      ['spec.reinvocationPolicy', 'spec.mutations[0]'],
    );
    assert.throws(
      () =>
        v.evaluateMutatingPolicy(
          { policy: bare, binding: MUTATING_BINDING },
          { operation: 'CREATE', kind: PROBES, params, crd: CRD },
        ),
      /spec\.reinvocationPolicy: must be Never or IfNeeded/,
    );
  });

  test('a request object without apiVersion and kind is of the kind written; one of another kind is refused', () => {
    const object = { metadata: { name: 'bare', namespace: 'default' }, spec: { replicas: 2, image: 'nginx' } };
    const r = v.evaluateMutatingPolicy(PAIR, {
      operation: 'CREATE',
      kind: PROBES,
      object,
      namespace,
      params,
      crd: CRD,
    });
    assert.equal(r.allowed, true, JSON.stringify(r.status));
    assert.deepEqual((r.object as Obj).spec?.labels, { owner: 'team-a' }, 'mutated, and defaulted (labels: {} first)');
    assert.throws(
      () =>
        v.evaluateMutatingPolicy(PAIR, {
          operation: 'CREATE',
          kind: PROBES,
          object: { ...object, apiVersion: 'v1', kind: 'ConfigMap' },
          params,
          crd: CRD,
        }),
      /object: is a \/v1, Kind=ConfigMap, but the request writes cel\.opkit\.test\/v1, Kind=Probe/,
    );
  });

  test('checkPolicy: a broken mutation is refused by the apiserver and found offline, at the same field', async () => {
    const broken = structuredClone(MUTATING_POLICY) as unknown as {
      metadata: { name: string };
      spec: { mutations: object[] };
    };
    broken.metadata.name = 'broken';
    broken.spec.mutations = [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{spec: ' } }];
    const res = await env.api.request<{ message: string }>({
      method: 'POST',
      path: '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies?dryRun=All',
      body: broken,
    });
    assert.equal(res.status, 422, res.text);
    const check = v.checkPolicy(broken, [CRD]);
    assert.deepEqual(
      check.problems.map((p) => [p.field, p.typeCheck]),
      [['spec.mutations[0].applyConfiguration.expression', false]],
    );
    assert.ok(res.body.message.includes('spec.mutations[0].applyConfiguration.expression'), res.body.message);
    // the fixture itself is clean; a typo in a field it sets compiles (the apiserver accepts it) but does not type-check
    assert.deepEqual(v.checkPolicy(MUTATING_POLICY, [CRD]).problems, []);
    const typo = structuredClone(MUTATING_POLICY) as unknown as { spec: { mutations: object[] } };
    typo.spec.mutations = [
      { patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{spec: Object.spec{replica: 3}}' } },
      { patchType: 'JSONPatch', jsonPatch: { expression: '[JSONPatch{op: "add", path: "/spec/tagz/-", value: "x"}]' } },
    ];
    const accepted = await env.api.request({
      method: 'POST',
      path: '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies?dryRun=All',
      body: { ...typo, metadata: { name: 'typo' } },
    });
    assert.equal(accepted.status, 201, accepted.text);
    const found = v.checkPolicy(typo, [CRD]).problems;
    assert.deepEqual(
      found.map((p) => [p.field, p.typeCheck]),
      [
        ['spec.mutations[0].applyConfiguration.expression', true],
        ['spec.mutations[1].jsonPatch.expression', true],
      ],
    );
    assert.match(found[0]?.detail ?? '', /undefined field 'replica'/);
    assert.match(found[1]?.detail ?? '', /no field "tagz"/);
  });
});
