/**
 * @module chaos/verdicts
 * The invariants a trial judges from its records rather than from the objects: why a step did not settle (the objects
 * the operator kept writing), `same-objects` (the objects without an owner, counted by kind), `leader-only` (the
 * writes against the Lease's holders) and `no-crash-loop` (the replicas' own exits).
 *
 * Guarantees: each verdict names the object, the replica or the kind, and says what was seen and what was expected.
 */
import type { AuditEvent } from '../audit-log.ts';
import { type ConvergenceViolation, writesWhileSettled } from './convergence.ts';
import { counts } from './faults.ts';
import { describeRequest } from './request-info.ts';
import type { ChaosSystem } from './system.ts';
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
      object: leaderless ? 'the Lease' : 'the operator',
      message: leaderless
        ? `no replica held the Lease (or its holder was not running) for ${seconds} s`
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
  const out: Violation[] = [];
  for (const w of system.writes.slice(firstWrite)) {
    if (!counts(w.info, namespace)) continue;
    const started = system.replicas[w.replica]?.starts.findLast((s) => s <= w.at) ?? 0;
    const from = w.at - 1_000;
    const before = system.holders.findLast((h) => h.at <= from);
    // the watch sees a takeover a moment after it: a holder seen up to 1 s after the write counts too
    const during = system.holders.filter((h) => h.at > from && h.at <= w.at + 1_000);
    const held = [...(before ? [before] : []), ...during].some((h) => {
      const first = system.holders.find((x) => x.identity === h.identity)?.at ?? 0;
      return h.replica === w.replica && first >= started;
    });
    if (!held)
      out.push({
        invariant: 'leader-only',
        object: `chaos-${w.replica}`,
        message: `chaos-${w.replica} wrote (${describeRequest(w.info)}) at ${new Date(w.at).toISOString()} while it did not hold the Lease (${before?.identity || 'nobody'} did)`,
      });
  }
  return out;
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
