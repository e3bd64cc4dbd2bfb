/**
 * A fleet on three real control planes: a hub and two members, read from a folder of kubeconfig files. Each member's
 * controller copies the hub's ConfigMaps labelled `propagate=true` into it (watching the hub, writing in the member).
 * Checked: every hub object reaches every member (a non-ASCII one and one of 300 KB among them); a member added at run
 * time is engaged within seconds; one cut off by a fault proxy is reported unreachable and slows nothing of the other,
 * and catches up when it answers again; one removed is disengaged: no reconcile of it runs any more, its series leave
 * /metrics, its cache is garbage-collected.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type Environment, FaultProxy, start, targetOf, waitFor } from '@opkit/testenv';
import { Client, loadConfig, resource } from '../src/client/index.ts';
import type { ConfigMap } from '../src/client/kinds/core.ts';
import { ConfigMaps, Namespaces, Secrets } from '../src/client/kinds/index.ts';
import { type KubeObject, Manager } from '../src/index.ts';
import { silentLogger } from '../src/manager/index.ts';
import {
  type ClusterReport,
  type Fleet,
  type FleetMember,
  fleetCopies,
  fleetCopyMetadata,
  isFleetCopy,
  kubeconfigFolder,
  kubeconfigSecrets,
} from '../src/multicluster/index.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const SOURCE = 'fleet-source';
const Gadgets = resource<KubeObject>({
  group: 'nowhere.example.com',
  version: 'v1',
  kind: 'Gadget',
  plural: 'gadgets',
  namespaced: true,
});

/** What the members' controllers did: reconciles under way and done, by cluster. */
const inFlight = new Map<string, number>();
const reconciles: { cluster: string; at: number }[] = [];
const caches = new Map<string, WeakRef<object>[]>();

/** Each member copies the hub's ConfigMaps labelled propagate=true (see the module comment). */
function setup(member: FleetMember): void {
  caches.set(member.name, [...(caches.get(member.name) ?? []), new WeakRef(member.cache)]);
  if (member.name === 'unserved') {
    // a kind the member does not serve: every engagement fails, and is retried
    member
      .controller(Gadgets)
      .watchesIn(member.hub.cache, ConfigMaps, () => [])
      .complete(async () => ({}));
    return;
  }
  member
    .controller(ConfigMaps, fleetCopies)
    .watchesIn(member.hub.cache, ConfigMaps, (cm) =>
      cm.metadata.labels?.propagate === 'true' ? [{ namespace: SOURCE, name: cm.metadata.name ?? '' }] : [],
    )
    .complete(async (req, ctx) => {
      assert.equal(ctx.cluster, member.name);
      inFlight.set(ctx.cluster, (inFlight.get(ctx.cluster) ?? 0) + 1);
      reconciles.push({ cluster: ctx.cluster, at: Date.now() });
      try {
        const source = await member.hub.cache.get(ConfigMaps, req);
        const copy = await ctx.cache.get(ConfigMaps, req);
        if (source?.metadata.labels?.propagate === 'true') {
          await ctx.rawClient.apply(Namespaces, { metadata: { name: SOURCE } }, { fieldManager: 'fleet' });
          const body: ConfigMap = {
            metadata: { name: req.name, namespace: SOURCE, ...fleetCopyMetadata(source) },
            data: source.data ?? {},
          };
          await ctx.rawClient.apply(ConfigMaps, body, { fieldManager: 'fleet', force: true });
        } else if (copy && isFleetCopy(copy)) {
          await ctx.rawClient.delete(ConfigMaps, req);
        }
      } finally {
        inFlight.set(ctx.cluster, (inFlight.get(ctx.cluster) ?? 1) - 1);
      }
      return {};
    });
}

describe('a fleet of two members, from a folder of kubeconfigs', () => {
  let hub: Environment;
  let m1: Environment;
  let m2: Environment;
  let hubClient: Client;
  let m1Client: Client;
  let m2Client: Client;
  let proxy: FaultProxy;
  let dir: string;
  let mgr: Manager;
  let fleet: Fleet;
  const stop = new AbortController();
  let running: Promise<void>;

  /** A kubeconfig of `env`, reaching it at `server` (default its own). */
  const kubeconfigOf = async (env: Environment, server?: string) => {
    const text = await readFile(env.kubeconfigPath, 'utf8');
    return server ? text.replace(env.server, server) : text;
  };
  const hubObject = (name: string, data: Record<string, string>) =>
    hubClient.create(ConfigMaps, { metadata: { name, namespace: SOURCE, labels: { propagate: 'true' } }, data });
  const copyIn = (client: Client, name: string) =>
    client.getIfExists(ConfigMaps, { namespace: SOURCE, name }).catch(() => undefined);

  before(async () => {
    const envs = await Promise.all([0, 1, 2].map(() => start({ nodes: 0, log: () => {} })));
    [hub, m1, m2] = envs as [Environment, Environment, Environment];
    const client = async (env: Environment) => new Client(await loadConfig({ path: env.kubeconfigPath }));
    [hubClient, m1Client, m2Client] = (await Promise.all(envs.map(client))) as [Client, Client, Client];
    await hubClient.create(Namespaces, { metadata: { name: SOURCE } });
    proxy = await FaultProxy.start({ target: targetOf(m1.server) });
    dir = await mkdtemp(join(tmpdir(), 'fleet-'));
    await writeFile(join(dir, 'm1.kubeconfig'), await kubeconfigOf(m1, proxy.url));
    await writeFile(join(dir, '.m1.kubeconfig.swp'), 'not a kubeconfig: skipped');
    mgr = await Manager.create({
      name: 'fleet-test',
      kubeconfig: { path: hub.kubeconfigPath },
      leaderElection: { enabled: false },
      metrics: { bindAddress: '127.0.0.1:0', secure: false },
      health: { bindAddress: '127.0.0.1:0' },
      log: silentLogger,
    });
    fleet = mgr.fleet({
      provider: kubeconfigFolder(dir, { intervalMs: 500 }),
      setup,
      syncTimeoutMs: 10_000,
      probeIntervalMs: 300,
      probeTimeoutMs: 400,
    });
    running = mgr.start(stop.signal);
  });
  after(async () => {
    stop.abort();
    await running?.catch(() => {});
    await proxy?.close();
    for (const c of [hubClient, m1Client, m2Client]) c?.close();
    await Promise.all([hub, m1, m2].map((e) => e?.stop()));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('every hub object reaches the member: non-ASCII data, and one of 300 KB', async () => {
    await waitFor('m1 ready', async () => fleet.status().some((s) => s.name === 'm1' && s.state === 'ready'), 30_000);
    const big = 'ü✓'.repeat(100_000);
    await hubObject('plain', { greeting: 'grüße, 日本' });
    await hubObject('big', { blob: big });
    await waitFor('copies in m1', async () => (await copyIn(m1Client, 'big'))?.data?.blob === big, 30_000);
    assert.deepEqual((await copyIn(m1Client, 'plain'))?.data, { greeting: 'grüße, 日本' });
    assert.deepEqual(
      fleet.status().map((s) => [s.name, s.state]),
      [['m1', 'ready']],
    );
  });

  test('a member added at run time is engaged within seconds, and gets every object', async () => {
    const added = Date.now();
    await writeFile(join(dir, 'm2.kubeconfig'), await kubeconfigOf(m2));
    await waitFor('m2 ready', async () => fleet.status().some((s) => s.name === 'm2' && s.state === 'ready'), 30_000);
    const engagedMs = Date.now() - added;
    await waitFor('copies in m2', async () => (await copyIn(m2Client, 'plain')) !== undefined, 30_000);
    assert.ok(engagedMs < 10_000, `engaged in ${engagedMs} ms`);
    const metrics = await (await fetch(`http://${mgr.metricsAddress}/metrics`)).text();
    assert.match(metrics, /^opkit_fleet_cluster_ready\{cluster="m2"\} 1$/m);
    assert.match(
      metrics,
      /^controller_runtime_reconcile_total\{cluster="m2",controller="configmap",result="success"\} \d+$/m,
    );
  });

  test('a member cut off is reported unreachable and slows nothing of the other; it catches up when it answers', async () => {
    proxy.setMode({ kind: 'freeze' });
    await waitFor(
      'm1 unreachable',
      async () => fleet.status().some((s) => s.name === 'm1' && s.state === 'unreachable'),
      10_000,
    );
    const made = Date.now();
    await hubObject('while-cut', { at: String(made) });
    await waitFor('the copy in m2', async () => (await copyIn(m2Client, 'while-cut')) !== undefined, 10_000);
    const m2Ms = Date.now() - made;
    assert.ok(m2Ms < 3_000, `m2 got it in ${m2Ms} ms while m1 was cut off`);
    const health = await (await fetch(`http://${mgr.healthAddress}/readyz`)).status;
    assert.equal(health, 200, 'one member down does not take the operator out of service');
    proxy.setMode({ kind: 'pass' });
    await waitFor(
      'm1 ready again',
      async () => fleet.status().some((s) => s.name === 'm1' && s.state === 'ready'),
      30_000,
    );
    await waitFor('m1 caught up', async () => (await copyIn(m1Client, 'while-cut')) !== undefined, 60_000);
  });

  test('a member removed is disengaged: nothing of it runs, its series go, its cache is collected', async () => {
    await rm(join(dir, 'm2.kubeconfig'));
    await waitFor('m2 gone', async () => !fleet.status().some((s) => s.name === 'm2'), 30_000);
    const gone = Date.now();
    assert.equal(inFlight.get('m2') ?? 0, 0, 'no reconcile of m2 under way');
    await hubObject('after-m2', { x: '1' });
    await waitFor('the copy in m1', async () => (await copyIn(m1Client, 'after-m2')) !== undefined, 10_000);
    assert.equal(reconciles.filter((r) => r.cluster === 'm2' && r.at >= gone).length, 0, 'no reconcile of m2 since');
    assert.equal(await copyIn(m2Client, 'after-m2'), undefined);
    const metrics = await (await fetch(`http://${mgr.metricsAddress}/metrics`)).text();
    assert.doesNotMatch(metrics, /cluster="m2"/);
    assert.match(metrics, /cluster="m1"/);
    // a WeakRef's target is kept until the job that dereferenced it ends: collect in a job of its own
    const collected = () => caches.get('m2')?.every((r) => r.deref() === undefined) === true;
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 50));
      gc();
      await new Promise((r) => setImmediate(r));
      if (collected()) break;
    }
    assert.ok(collected(), "m2's caches were garbage-collected");
  });

  test('a member whose kinds are not served is retried with backoff, reported failing, and leaves nothing behind', async () => {
    const collectedOf = (name: string) => (caches.get(name) ?? []).filter((r) => r.deref() === undefined).length;
    await writeFile(join(dir, 'unserved.kubeconfig'), await kubeconfigOf(m1));
    await waitFor('three attempts', async () => (caches.get('unserved')?.length ?? 0) >= 3, 20_000);
    const status = fleet.status().find((s) => s.name === 'unserved');
    assert.equal(status?.state, 'failing');
    assert.match(status?.error ?? '', /does not serve gadgets\.nowhere\.example\.com/);
    const metrics = await (await fetch(`http://${mgr.metricsAddress}/metrics`)).text();
    assert.match(metrics, /^opkit_fleet_cluster_ready\{cluster="unserved"\} 0$/m);
    const families = metrics.match(/^# TYPE \S+/gm) ?? [];
    assert.equal(
      new Set(families).size,
      families.length,
      'each family once: failed attempts leave no registry attached',
    );
    await rm(join(dir, 'unserved.kubeconfig'));
    await waitFor('unserved gone', async () => !fleet.status().some((s) => s.name === 'unserved'), 10_000);
    const attempts = caches.get('unserved')?.length ?? 0;
    for (let i = 0; i < 20 && collectedOf('unserved') < attempts; i++) {
      await new Promise((r) => setTimeout(r, 50));
      gc();
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(collectedOf('unserved'), attempts, 'the caches of every failed attempt were collected');
  });

  test('a hub object deleted is deleted from the members', async () => {
    await hubClient.delete(ConfigMaps, { namespace: SOURCE, name: 'plain' });
    await waitFor('gone from m1', async () => (await copyIn(m1Client, 'plain')) === undefined, 10_000);
    assert.equal(inFlight.get('m1'), 0);
  });

  test('kubeconfig Secrets in the hub: both layouts; one that names a file is a problem; changes and deletes seen', async () => {
    const ns = 'fleet-secrets';
    await hubClient.create(Namespaces, { metadata: { name: ns } });
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    const secret = (name: string, labels: Record<string, string>, data: Record<string, string>) =>
      hubClient.create(Secrets, { metadata: { name, namespace: ns, labels }, data });
    await secret('m1', { 'opkit.dev/kubeconfig': 'true' }, { kubeconfig: b64(await kubeconfigOf(m1)) });
    await secret(
      'eu-1-kubeconfig',
      { 'cluster.x-k8s.io/cluster-name': 'eu-1' },
      { value: b64(await kubeconfigOf(m2)) },
    );
    // a kubeconfig whose user names the operator's own token file: refused, never engaged
    const stolen = JSON.stringify({
      clusters: [{ name: 'c', cluster: { server: m2.server } }],
      users: [{ name: 'u', user: { tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    });
    await secret('bad', { 'opkit.dev/kubeconfig': 'true' }, { kubeconfig: b64(stolen) });
    await secret('unrelated', {}, { kubeconfig: b64('not read') });
    const watch = (layout: 'opkit' | 'cluster-api') => {
      const reports: ClusterReport[] = [];
      const stop = new AbortController();
      const done = kubeconfigSecrets({ namespace: ns, layout }).run({
        report: (r) => reports.push(r),
        signal: stop.signal,
        log: silentLogger,
        hub: hubClient,
      });
      return {
        reports,
        stop: async () => {
          stop.abort();
          await done;
        },
      };
    };
    const opkit = watch('opkit');
    const capi = watch('cluster-api');
    try {
      const last = (w: { reports: ClusterReport[] }) => w.reports.at(-1);
      await waitFor('both read', async () => last(opkit) !== undefined && last(capi) !== undefined, 10_000);
      assert.deepEqual(
        [...(last(opkit)?.clusters.keys() ?? [])],
        ['m1'],
        JSON.stringify([...(last(opkit)?.problems ?? [])]),
      );
      assert.match(
        last(opkit)?.problems.get('bad') ?? '',
        /Secret fleet-secrets\/bad, key kubeconfig: users\[u\]\.tokenFile names a file/,
      );
      assert.equal(last(opkit)?.clusters.get('m1')?.config.server, m1.server);
      assert.deepEqual([...(last(capi)?.clusters.keys() ?? [])], ['eu-1']);
      assert.equal(last(capi)?.clusters.get('eu-1')?.config.server, m2.server);
      const before = last(opkit)?.clusters.get('m1')?.fingerprint;
      await hubClient.patch(
        Secrets,
        { namespace: ns, name: 'm1' },
        { data: { kubeconfig: b64(await kubeconfigOf(m1, proxy.url)) } },
      );
      await waitFor('m1 changed', async () => last(opkit)?.clusters.get('m1')?.fingerprint !== before, 10_000);
      await hubClient.delete(Secrets, { namespace: ns, name: 'm1' });
      await waitFor('m1 gone', async () => last(opkit)?.clusters.has('m1') === false, 10_000);
    } finally {
      await Promise.all([opkit.stop(), capi.stop()]);
    }
  });
});
