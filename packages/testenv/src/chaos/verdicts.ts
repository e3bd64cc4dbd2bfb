/**
 * @module chaos/verdicts
 * The invariants a trial judges from its records rather than from the objects: why a step did not settle (the objects
 * the operator kept writing), `same-objects` (the objects without an owner, counted by kind), `leader-only` (the
 * writes against the Lease's holders), `shard-owner-only` (a sharded operator's writes against its shards' fences), `no-crash-loop` (the replicas' own
 * exits), `token-not-logged` (the replicas' output against their ServiceAccount token) and `rbac-allows` (the requests
 * an authorizer refused).
 *
 * Guarantees: each verdict names the object, the replica or the kind, and says what was seen and what was expected.
 */
import type { AuditEvent } from '../audit-log.ts';
import { type ConvergenceViolation, writesWhileSettled } from './convergence.ts';
import { counts } from './faults.ts';
import { clusterShard, LeaseBook, replicaName } from './leases.ts';
import { authorizes } from './rbac.ts';
import { describeRequest } from './request-info.ts';
import type { ChaosSystem, DeniedRequest, OperatorWrite } from './system.ts';
import type { Violation } from './trial.ts';

/** Why a step did not settle: the objects written in its last 10 s, or that no replica led. */
export function unsettled(
  system: ChaosSystem,
  at: { readonly namespace: string; readonly mark: number; readonly now: number; readonly timeoutMs: number },
  leaderless: boolean,
): ConvergenceViolation[] {
  const { namespace, mark, now } = at;
  const user = system.serviceAccount.user;
  const events: AuditEvent[] = system.writes
    .slice(mark)
    .filter((w) => counts(w.info, namespace))
    .map((w) => ({
      verb: w.info.verb,
      user: { username: user },
      objectRef: {
        ...(w.info.resource !== undefined ? { resource: w.info.resource } : {}),
        ...(w.info.subresource !== undefined ? { subresource: w.info.subresource } : {}),
        ...(w.info.namespace !== undefined ? { namespace: w.info.namespace } : {}),
        ...(w.info.name !== undefined ? { name: w.info.name } : {}),
      },
      responseStatus: { code: 200 },
      requestReceivedTimestamp: new Date(w.at).toISOString(),
    }));
  const found = writesWhileSettled(events, { user, from: now - 10_000, to: now });
  if (found.length > 0) return found;
  const seconds = Math.round(at.timeoutMs / 1000);
  return [
    {
      invariant: 'settles',
      object: leaderless ? (system.sharded ? "the shards' fences" : 'the Lease') : 'the operator',
      message: leaderless
        ? system.sharded
          ? `some shard's fence Lease was not held by a running replica for ${seconds} s`
          : `no replica held the Lease (or its holder was not running) for ${seconds} s`
        : `the operator did not settle within ${seconds} s`,
    },
  ];
}

/** Kinds whose count of objects without an owner differs from the fault-free run's (a leaked or missing object). */
export function sameObjects(baseline: ReadonlyMap<string, number>, trial: ReadonlyMap<string, number>): Violation[] {
  return [...new Set([...baseline.keys(), ...trial.keys()])].sort().flatMap((kind) => {
    const [want, got] = [baseline.get(kind) ?? 0, trial.get(kind) ?? 0];
    if (want === got) return [];
    const message = `${got} ${kind} without an owner in the namespace (the fault-free run had ${want}): ${got > want ? 'an object leaked (a cleanup that did not run?)' : 'an object missing'}`;
    return [{ invariant: 'same-objects', object: kind, message }];
  });
}

/**
 * Writes of the trial by a replica that did not hold the Lease then: no holder of it was seen from 1 s before to 1 s
 * after the write (slack for the watch that sees the Lease).
 */
export function leaderOnly(system: ChaosSystem, namespace: string, firstWrite: number): Violation[] {
  return system.writes.slice(firstWrite).flatMap((w) => {
    if (!counts(w.info, namespace)) return [];
    const started = system.replicas[w.replica]?.starts.findLast((s) => s <= w.at) ?? 0;
    if (system.leases.heldBy(system.holders, w.replica, started, w.at, 1_000)) return [];
    const then = LeaseBook.holderAt(system.holders, w.at - 1_000)?.identity || 'nobody';
    return [unfenced(w, `while it did not hold the Lease (${then} did)`, 'leader-only')];
  });
}

/**
 * Sharded: writes of the trial by a replica whose process did not hold the fence of the object's shard then (within
 * 1 s, as for `leaderOnly`). `shardOf` gives an object's shard from its label (`resource/name` → shard); a write it
 * cannot place (a create by `generateName`, an object never seen with its label) is not judged.
 */
export function shardOwnerOnly(
  system: ChaosSystem,
  namespace: string,
  firstWrite: number,
  shardOf: ReadonlyMap<string, number>,
): Violation[] {
  return system.writes.slice(firstWrite).flatMap((w) => {
    if (!counts(w.info, namespace)) return [];
    // a write in a member is judged by the fence of the member's shard of the fleet's ring; in the hub, by its object's
    const member = w.cluster !== undefined;
    const shard = member ? clusterShard(w.cluster as string) : shardOf.get(`${w.info.resource}/${w.info.name}`);
    if (shard === undefined || (!member && w.info.name === undefined)) return [];
    const fence = (member ? system.leases.fleetFences : system.leases.fences).get(shard) ?? [];
    const started = system.replicas[w.replica]?.starts.findLast((s) => s <= w.at) ?? 0;
    if (system.leases.heldBy(fence, w.replica, started, w.at, 1_000)) return [];
    const then = LeaseBook.holderAt(fence, w.at - 1_000)?.identity || 'nobody';
    const which = member ? `shard ${shard} of the fleet (member ${w.cluster})` : `shard ${shard}`;
    return [unfenced(w, `while it did not hold the fence of ${which} (${then} did)`, 'shard-owner-only')];
  });
}

const unfenced = (w: OperatorWrite, why: string, invariant: string): Violation => ({
  invariant,
  object: replicaName(w.replica),
  message: `${replicaName(w.replica)} wrote (${describeRequest(w.info)}) at ${new Date(w.at).toISOString()} ${why}`,
});

/** How many Event writes in one settle window make a loop rather than the Events of the reconcile that just ended. */
export const EVENTS_WHILE_QUIET = 5;

/**
 * `bounded-events`: the operator kept recording Events about the trial's objects while nothing else changed (the
 * window the step was judged quiet in): an Event on every pass of a reconcile that never stops, which fills etcd.
 */
export function eventsWhileQuiet(
  system: ChaosSystem,
  namespace: string,
  window: { readonly from: number; readonly to: number },
): Violation[] {
  const events = system.writes.filter(
    (w) => w.info.resource === 'events' && w.info.namespace === namespace && w.at > window.from && w.at <= window.to,
  );
  if (events.length < EVENTS_WHILE_QUIET) return [];
  const seconds = ((window.to - window.from) / 1000).toFixed(1);
  return [
    {
      invariant: 'bounded-events',
      object: 'Events',
      message: `the operator wrote ${events.length} Events in the ${seconds} s its objects were quiet (${[...new Set(events.map((w) => replicaName(w.replica)))].join(', ')}): an Event on every pass of a reconcile that keeps running?`,
    },
  ];
}

/** Replicas that exited by themselves: twice in a trial, or once in the fault-free run. */
export function crashLoops(system: ChaosSystem, before: readonly number[], faultFree: boolean): Violation[] {
  return system.replicas.flatMap((r, i) => {
    const own = r.exits.slice(before[i]).filter((e) => !e.caused);
    if (own.length < (faultFree ? 1 : 2)) return [];
    const e = own.at(-1);
    return [
      {
        invariant: 'no-crash-loop',
        object: r.spec.name,
        message: `${r.spec.name} exited by itself ${own.length} ${own.length === 1 ? 'time' : 'times'}${faultFree ? ' in the fault-free run' : ''}, last with ${e?.code ?? e?.signal}:\n${(e?.tail ?? []).slice(-12).join('\n')}`,
      },
    ];
  });
}

/** Replicas whose output held their ServiceAccount token for the first time in this trial (`before`: `leaks` then). */
export function tokensLogged(system: ChaosSystem, before: readonly number[]): Violation[] {
  return system.replicas.flatMap((r, i) =>
    r.leaks.length > (before[i] ?? 0)
      ? [
          {
            invariant: 'token-not-logged',
            object: r.spec.name,
            message: `${r.spec.name} printed its ServiceAccount token (${r.leaks.join(', ')}): whoever reads the logs can act as the operator; log the request, not its headers or the kubeconfig`,
          },
        ]
      : [],
  );
}

/**
 * `rbac-allows`: requests of the trial the apiserver's authorizer refused, one per cluster, verb and resource: a
 * permission the operator uses that its RBAC (config/rbac; in a member, config/fleet) does not grant. A refusal the
 * authorizer takes back when asked again now (a SubjectAccessReview) is left out: an apiserver that was restarting
 * refuses what its RBAC authorizer has not loaded yet.
 */
export async function rbacDenied(system: ChaosSystem, from: number): Promise<Violation[]> {
  const seen = new Map<string, DeniedRequest[]>();
  for (const d of system.denied.slice(from)) {
    const key = `${d.cluster ?? ''} ${d.info.verb} ${d.info.resource ?? ''}${d.info.subresource ? `/${d.info.subresource}` : ''}`;
    seen.set(key, [...(seen.get(key) ?? []), d]);
  }
  const out: Violation[] = [];
  for (const all of seen.values()) {
    const d = all[0] as DeniedRequest;
    const member = d.cluster === undefined ? undefined : system.fleet?.member(d.cluster);
    const [env, user] = member ? [member.env, member.user] : [system.env, system.serviceAccount.user];
    const now = await authorizes(env, user, d.info).catch((err: Error) => err);
    if (now === true) continue;
    const where = d.cluster === undefined ? 'the hub' : `member ${d.cluster}`;
    const unasked = now instanceof Error ? ` (asked again, the authorizer did not answer: ${now.message})` : '';
    const fix = d.cluster === undefined ? 'permissions' : 'memberPermissions';
    out.push({
      invariant: 'rbac-allows',
      object: `${replicaName(d.replica)} in ${where}`,
      message: `${all.length} ${all.length === 1 ? 'request' : 'requests'} refused by the RBAC in ${where} (${describeRequest(d.info)}): ${d.message}; add it to the controller's ${fix}, then run opkit generate${unasked}`,
    });
  }
  return out;
}
