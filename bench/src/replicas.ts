/**
 * @module replicas
 * N replicas of the AppService operator (opkit) against one cluster, as a Deployment with N pods runs them: each its
 * own process with `POD_NAME` `<prefix>-<i>` (the runtime's default identity starts with it), plain-HTTP /metrics and
 * /readyz on loopback ports of its own, the same workers and flags (`--sharding` when asked).
 *
 * - `startReplicas` spawns them; `stopReplicas` stops them all (SIGTERM, then waits for each exit).
 * - `waitReady` resolves once every /readyz answers 200, and fails when one exits or the deadline passes.
 * - `installShardingRbac` grants what a sharded install adds (the operator's generated config/sharding/rbac.yaml:
 *   Leases list and delete, patch of AppServices), for sharded runs only, as a single-replica install lacks it.
 * - `shardOwners` reads which live replica holds each shard's fence Lease (`appservice-operator-shard-<b>`), from
 *   the apiserver: the outside view of the split, to check the replicas' own `opkit_shards_held` against.
 */
import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { NAME, NAMESPACE } from '@opkit/appservice';
import { Applier, type Client, parseManifests } from '@opkit/runtime/client';
import { Leases } from '@opkit/runtime/kinds';
import { stopProcess } from './harness.ts';
import { startPeer } from './peers.ts';

export interface Replica {
  /** Its POD_NAME. */
  readonly name: string;
  readonly proc: ChildProcess;
  readonly metricsUrl: string;
  readonly readyzUrl: string;
}

export interface ReplicaSetOptions {
  readonly kubeconfig: string;
  readonly count: number;
  readonly workers: number;
  /** Started with `--sharding`. */
  readonly sharding: boolean;
  /** With `--sharding`: its `--sharding-filter` (default: the operator's, `auto`). */
  readonly filter?: 'labels' | 'server';
  /** POD_NAME prefix. */
  readonly prefix: string;
}

/** The shard count of the contract: fence Leases `<operator>-shard-0` … `-31`. */
export const SHARD_COUNT = 32;
const FENCE_PREFIX = `${NAME}-shard-`;
const MEMBER_PREFIX = `${NAME}-member-`;

const SHARDING_RBAC = new URL('../config/sharding/rbac.yaml', import.meta.resolve('@opkit/appservice'));

/** Applies the operator's sharding RBAC component (server-side apply, field manager `opkit`, as its installer does). */
export async function installShardingRbac(admin: Client): Promise<void> {
  const objects = parseManifests(await readFile(SHARDING_RBAC, 'utf8'), 'config/sharding/rbac.yaml');
  await new Applier(admin, 'opkit').applyAll(objects);
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export async function startReplicas(o: ReplicaSetOptions): Promise<Replica[]> {
  const replicas: Replica[] = [];
  try {
    for (let i = 0; i < o.count; i++) {
      const [metricsPort, healthPort] = [await freePort(), await freePort()];
      const name = `${o.prefix}-${i}`;
      const proc = await startPeer('opkit', o.kubeconfig, o.workers, undefined, {
        metricsPort,
        healthPort,
        args: o.sharding ? ['--sharding', ...(o.filter ? [`--sharding-filter=${o.filter}`] : [])] : [],
        env: { POD_NAME: name },
      });
      replicas.push({
        name,
        proc,
        metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
        readyzUrl: `http://127.0.0.1:${healthPort}/readyz`,
      });
    }
    return replicas;
  } catch (err) {
    await stopReplicas(replicas);
    throw err;
  }
}

export async function stopReplicas(replicas: readonly Replica[]): Promise<void> {
  await Promise.all(replicas.map((r) => stopProcess(r.proc)));
}

/** Resolves once every replica's /readyz answers 200; fails when one exits or after `timeoutMs`. */
export async function waitReady(replicas: readonly Replica[], timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  const pending = new Set(replicas);
  while (pending.size > 0) {
    for (const r of [...pending]) {
      if (r.proc.exitCode !== null || r.proc.signalCode !== null)
        throw new Error(`replica ${r.name} exited (${r.proc.exitCode ?? r.proc.signalCode}) before it was ready`);
      const ok = await fetch(r.readyzUrl, { signal: AbortSignal.timeout(2_000) }).then(
        (res) => res.status === 200,
        () => false,
      );
      if (ok) pending.delete(r);
    }
    if (pending.size === 0) return;
    if (performance.now() > deadline)
      throw new Error(`replicas not ready after ${timeoutMs / 1000} s: ${[...pending].map((r) => r.name).join(', ')}`);
    await sleep(250);
  }
}

/**
 * Who holds each shard's fence Lease now: the buckets of each replica and the buckets held by no live replica. A fence
 * is held while its `holderIdentity` has a fresh member Lease (`appservice-operator-member-<identity>`, renewed within
 * its duration): fences themselves are written only when they change hands. A replica is matched by name: an identity
 * equal to it, or it and a suffix `-<id>` or `_<id>`, as the runtime makes identities from POD_NAME.
 */
export async function shardOwners(
  admin: Client,
  replicas: readonly Replica[],
): Promise<{ byReplica: Record<string, number[]>; unheld: number[] }> {
  const byReplica: Record<string, number[]> = Object.fromEntries(replicas.map((r) => [r.name, [] as number[]]));
  const held = new Set<number>();
  const leases = (await admin.list(Leases, { namespace: NAMESPACE })).items;
  const live = new Set(
    leases
      .filter((l) => l.metadata.name?.startsWith(MEMBER_PREFIX))
      .filter((l) => Date.parse(l.spec?.renewTime ?? '') + (l.spec?.leaseDurationSeconds ?? 0) * 1000 > Date.now())
      .map((l) => l.metadata.name?.slice(MEMBER_PREFIX.length)),
  );
  for (const lease of leases) {
    const name = lease.metadata.name ?? '';
    if (!name.startsWith(FENCE_PREFIX)) continue;
    const bucket = Number(name.slice(FENCE_PREFIX.length));
    const holder = lease.spec?.holderIdentity ?? '';
    const owner = replicas.find(
      (r) => holder.startsWith(r.name) && /^([-_][0-9a-z]+)?$/.test(holder.slice(r.name.length)),
    );
    if (!Number.isInteger(bucket) || !owner || !live.has(holder)) continue;
    byReplica[owner.name]?.push(bucket);
    held.add(bucket);
  }
  const unheld = Array.from({ length: SHARD_COUNT }, (_, b) => b).filter((b) => !held.has(b));
  return { byReplica, unheld };
}
