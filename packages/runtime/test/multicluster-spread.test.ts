/**
 * A fleet spread over two sharded replicas (multicluster/spread.ts), on real control planes: a hub and three members.
 * Checked: together the replicas engage each member exactly once, and every hub object reaches every member. Then
 * replica A is cut off from the hub (its fault proxy freezes every connection, its Leases with them) while its
 * members' own watches still reach them, and past its renew deadline a copy in its member is damaged, which its member
 * controller would repair: A must not write to the member any more (its fence, or its deadline's timer disengaging
 * the member, whichever comes first; a pause past the Lease, where timers fire late, is `opkit chaos --sharding`'s
 * trial in packages/cli/test/fleet-chaos.test.ts), and B takes the member over and repairs it. Every member write is
 * recorded with the replica that made it. When A is back, the members are spread again; when B stops, A runs them all.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FaultProxy, type FleetEnvironment, startFleet, targetOf } from '@opkit/testenv';
import { Client, loadConfig } from '../src/client/index.ts';
import type { ConfigMap } from '../src/client/kinds/core.ts';
import { ConfigMaps, Namespaces } from '../src/client/kinds/index.ts';
import { Manager } from '../src/index.ts';
import {
  type Fleet,
  type FleetMember,
  fleetCopies,
  fleetCopyMetadata,
  isFleetCopy,
  kubeconfigFolder,
} from '../src/multicluster/index.ts';
import { SHARD_COUNT } from '../src/sharding/ring.ts';
import { replicaLog, TIMINGS } from './sharding-support.ts';
import { clientVia, waitFor } from './support.ts';

const NS = 'spread';
// by the ring's hash, a runs eu-1 and b the others (a layout the cut-off test needs: a member on a)
const MEMBERS = ['eu-1', 'us-1', 'ap-1'];

/** Each member write a replica made (after the member's apiserver answered). */
const writes: { replica: string; cluster: string; at: number }[] = [];

/** The copy controller of docs/multicluster.md, recording its writes. */
function setup(replica: string) {
  return (member: FleetMember) => {
    member
      .controller(ConfigMaps, fleetCopies)
      .watchesIn(member.hub.cache, ConfigMaps, (cm) =>
        cm.metadata.labels?.propagate === 'true' ? [{ namespace: NS, name: cm.metadata.name ?? '' }] : [],
      )
      .complete(async (req, ctx) => {
        const source = await member.hub.cache.get(ConfigMaps, req);
        const copy = await ctx.cache.get(ConfigMaps, req);
        if (source?.metadata.labels?.propagate === 'true') {
          if (copy && isFleetCopy(copy) && copy.data?.v === source.data?.v) return {};
          await ctx.rawClient.apply(Namespaces, { metadata: { name: NS } }, { fieldManager: 'fleet' });
          const body: ConfigMap = { metadata: { name: req.name, namespace: NS, ...fleetCopyMetadata(source) } };
          await ctx.rawClient.apply(
            ConfigMaps,
            { ...body, data: source.data ?? {} },
            { fieldManager: 'fleet', force: true },
          );
          writes.push({ replica, cluster: ctx.cluster, at: Date.now() });
        } else if (copy && isFleetCopy(copy)) {
          await ctx.rawClient.delete(ConfigMaps, req);
          writes.push({ replica, cluster: ctx.cluster, at: Date.now() });
        }
        return {};
      });
  };
}

describe('a fleet spread over two sharded replicas', () => {
  let envs: FleetEnvironment;
  let hub: Client;
  const members = new Map<string, Client>();
  const replicas = new Map<string, { fleet: Fleet; stop: AbortController; proxy: FaultProxy; run: Promise<void> }>();

  async function replica(name: string): Promise<void> {
    const proxy = await FaultProxy.start({ target: targetOf(envs.hub.server) });
    const mgr = new Manager({
      name: 'spread-test',
      client: await clientVia(envs.hub, proxy.url),
      log: replicaLog(name, (_level, msg) => msg.includes('cluster') || msg.includes('sharding')),
      metrics: { bindAddress: '0' },
      health: { bindAddress: '0' },
      sharding: { enabled: true, namespace: NS, identity: name, ...TIMINGS },
      controllers: { gracefulShutdownTimeoutMs: 1_000 },
    });
    const fleet = mgr.fleet({
      provider: kubeconfigFolder(envs.dir, { intervalMs: 500 }),
      setup: setup(name),
      syncTimeoutMs: 10_000,
    });
    const stop = new AbortController();
    replicas.set(name, { fleet, stop, proxy, run: mgr.start(stop.signal) });
  }

  /** Which replica runs each member, when each runs on exactly one of `names` (and all shards are held); else undefined. */
  const spread = (names: string[]) => {
    const shards = names.flatMap((n) => replicas.get(n)?.fleet.shards ?? []);
    if (shards.length !== SHARD_COUNT || new Set(shards).size !== SHARD_COUNT) return undefined;
    const runs = new Map<string, string[]>();
    for (const n of names)
      for (const c of replicas.get(n)?.fleet.clusters() ?? []) runs.set(c, [...(runs.get(c) ?? []), n]);
    const once = MEMBERS.every((m) => runs.get(m)?.length === 1);
    return once ? new Map(MEMBERS.map((m) => [m, runs.get(m)?.[0] as string])) : undefined;
  };
  const copies = async (name: string, v: string) => {
    const all = await Promise.all(
      MEMBERS.map((m) =>
        members
          .get(m)
          ?.getIfExists(ConfigMaps, { namespace: NS, name })
          .catch(() => undefined),
      ),
    );
    return all.every((c) => c?.data?.v === v);
  };

  before(async () => {
    envs = await startFleet({ members: MEMBERS, start: { nodes: 0, log: () => {} } });
    hub = new Client(await loadConfig({ path: envs.hub.kubeconfigPath }));
    for (const [name, env] of envs.members)
      members.set(name, new Client(await loadConfig({ path: env.kubeconfigPath })));
    await hub.create(Namespaces, { metadata: { name: NS } });
    await replica('a');
    await replica('b');
  });

  after(async () => {
    for (const r of replicas.values()) {
      r.stop.abort();
      await r.run.catch(() => {});
      await r.proxy.close();
    }
    await envs?.stop();
  });

  test('each member runs on exactly one replica, and every hub object reaches every member', async () => {
    await waitFor('the members spread over a and b', async () => spread(['a', 'b']) !== undefined, 30_000);
    await hub.create(ConfigMaps, {
      metadata: { name: 'one', namespace: NS, labels: { propagate: 'true' } },
      data: { v: '1' },
    });
    await waitFor('the copy in every member', async () => copies('one', '1'), 20_000);
  });

  test('a replica cut off past its Lease writes nothing to its members; the other takes them over', async () => {
    const layout = spread(['a', 'b']);
    const member = [...(layout ?? new Map<string, string>())].find(([, r]) => r === 'a')?.[0];
    assert.ok(member, `a runs a member (layout: ${JSON.stringify([...(layout ?? [])])})`);
    const a = replicas.get('a');
    a?.proxy.setMode({ kind: 'freeze' });
    const cut = Date.now();
    // a still watches its members directly: damage a copy in one of them, so a's controller wants to write
    await new Promise((r) => setTimeout(r, TIMINGS.renewDeadlineMs + 500));
    const client = members.get(member) as Client;
    const damaged = (await client.get(ConfigMaps, { namespace: NS, name: 'one' })) as ConfigMap;
    await client.update(ConfigMaps, { ...damaged, data: { v: 'damaged' } });
    await waitFor(`b takes ${member} over`, async () => spread(['b'])?.get(member) === 'b', 30_000);
    await waitFor('b repairs the copy', async () => copies('one', '1'), 20_000);
    const late = writes.filter((w) => w.replica === 'a' && w.at > cut + TIMINGS.renewDeadlineMs);
    assert.deepEqual(late, [], 'no member write of a after its renew deadline');
    a?.proxy.setMode({ kind: 'pass' });
    await waitFor('a is back: spread again', async () => spread(['a', 'b']) !== undefined, 30_000);
  });

  test('when a replica stops, the other runs every member', async () => {
    const b = replicas.get('b');
    b?.stop.abort();
    await b?.run;
    await hub.create(ConfigMaps, {
      metadata: { name: 'two', namespace: NS, labels: { propagate: 'true' } },
      data: { v: '2' },
    });
    await waitFor('a runs every member', async () => spread(['a'])?.size === MEMBERS.length, 30_000);
    await waitFor('the new object in every member', async () => copies('two', '2'), 20_000);
  });
});
