/**
 * @module chaos/settle
 * A step's change, made as the user makes it, and the wait until the operator settled after it (chaos/trial says what
 * settled means and what is judged then).
 *
 * Guarantees: a change the apiserver cannot take for a while (it restarts, a webhook of the operator does not answer)
 * is tried again for the time a step may take and is then a `change-accepted` violation, never a `ChaosInput` error;
 * a step is never judged while its fault is busy, nor while the namespace cannot be read.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isTestenvError } from '../errors.ts';
import type { ArmedFault } from './faults.ts';
import { counts } from './faults.ts';
import { memberObjects } from './members.ts';
import type { Manifest } from './objects.ts';
import { describeStep, type ScenarioStep } from './scenario.ts';
import type { ChaosSystem } from './system.ts';
import type { TrialState, Violation } from './trial.ts';
import { eventsWhileQuiet, unsettled } from './verdicts.ts';

/**
 * Makes the step's change as the user; a refusal that may pass when tried again (the apiserver restarting, a webhook
 * of the operator that does not answer) is tried for the time a step may take, then is a `change-accepted`
 * violation. Any other refusal is the input's (`ChaosInput`).
 */
export async function change(state: TrialState, placed: ScenarioStep, what: string): Promise<Violation | undefined> {
  const { objects } = state.system;
  const retryMs = state.settings.convergeTimeoutMs;
  try {
    if (placed.apply !== undefined) await objects.apply(placed.apply, what, retryMs);
    else {
      await objects.delete(placed.delete, what, retryMs);
      state.deleted.add(`${placed.delete.kind} ${placed.delete.name}`);
    }
    return undefined;
  } catch (err) {
    if (!isTestenvError(err) || err.code !== 'ApiRequestFailed') throw err;
    return { invariant: 'change-accepted', object: describeStep(placed), message: err.message };
  }
}

/**
 * The namespace's objects of the watched kinds (in the members too), as uid@resourceVersion: it changes with any
 * write, by anyone.
 */
async function fingerprint(state: TrialState): Promise<string> {
  const { objects } = state.system;
  const lists = await Promise.all(state.settings.kinds.map((k) => objects.list(k.apiVersion, k.kind, state.namespace)));
  const fleet = state.system.fleet;
  if (fleet !== undefined)
    lists.push(...Object.values(await memberObjects(fleet, state.settings.memberKinds, state.namespace, new Set())));
  const rv = (o: Manifest) => (o.metadata as { resourceVersion?: string }).resourceVersion;
  return lists
    .flat()
    .map((o) => `${o.metadata.uid}@${rv(o)}`)
    .sort()
    .join(',');
}

/** Waits until the operator settled (see the module comment) or the time allowed ran out. */
export async function settle(state: TrialState, started: number, mark: number, armed: ArmedFault | undefined) {
  const { system, settings, namespace } = state;
  let seen = '';
  let changed = started; // when the namespace's objects last changed, or the fault last acted
  let from = started; // the time allowed counts from the step's change, or from the end of its fault's actions
  for (;;) {
    const now = Date.now();
    if (armed?.busy === true) from = now;
    // unreadable while a fault restarts the apiserver: not settled then
    const current = await fingerprint(state).catch(() => undefined);
    if (current === undefined || current !== seen || armed?.busy === true) [seen, changed] = [current ?? '', now];
    const last = system.writes.slice(mark).findLast((w) => counts(w.info, namespace))?.at ?? started;
    const leader = system.inCharge();
    const quietFrom = Math.max(last, changed, leader?.since ?? Number.POSITIVE_INFINITY);
    if (leader !== undefined && armed?.busy !== true && now - quietFrom >= settings.settleMs)
      return { ok: true, violations: eventsWhileQuiet(system, namespace, { from: quietFrom, to: now }) };
    if (now - from > settings.convergeTimeoutMs && armed?.busy !== true)
      return {
        ok: false,
        violations: unsettled(
          system,
          { namespace, mark, now, timeoutMs: settings.convergeTimeoutMs },
          leader === undefined,
        ),
      };
    await sleep(250);
  }
}

/** Waits until a replica leads (a trial starts only then); a Lease nobody takes is a violation of the next step. */
export async function waitForLeader(system: ChaosSystem, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (system.inCharge() === undefined && Date.now() < deadline) await sleep(100);
}
