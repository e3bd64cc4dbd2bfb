/**
 * @module chaos/faults
 * The faults a trial puts into one step of a scenario, each aimed at a bug class that Sieve and Acto report:
 * - `crash@k`: the replica that made the step's k-th write is killed (SIGKILL) right after the apiserver applied it,
 *   before the replica has the answer: the state between two writes of a reconcile is what the next leader finds.
 * - `stale`: the standby's watches are held from the start of the step; the leader is killed after its first write,
 *   so the standby takes over with a view that misses the step, and sees it 2 s later.
 * - `unobserved`: from the step's first write, the writer's watches of every kind but the project's own (its
 *   children's) are held for 3 s, then delivered coalesced per object: it reconciles on its own objects' events while
 *   it does not see what it made (one informer lags behind another), and never sees the states in between.
 * - `pause`: the leader is stopped (SIGSTOP) after its first write of the step, past its Lease (the standby takes
 *   over), then continued: it must notice before it writes again.
 * - `conflict@k`, `throttle@k`: the step's k-th write is answered 409 Conflict, or 429 Too Many Requests, by the
 *   proxy; the apiserver never sees it.
 *
 * Only the operator's writes of the trial's own namespace (and of cluster-scoped objects) count, never a Lease or an
 * Event. Guarantees: a fault fires at most once per trial; it is `busy` while an action it took is going on (a
 * replica paused, watches held), so the runner judges a step only after its fault ended, and `end()` continues what
 * is paused and releases what is held, whatever happened.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProxyAnswer } from './api-proxy.ts';
import { BOOKKEEPING_RESOURCES } from './convergence.ts';
import type { RequestInfo } from './request-info.ts';
import { isWrite } from './request-info.ts';
import { CHAOS_LEASE, type ChaosSystem, type WriteHooks } from './system.ts';

/** A fault's kind; `crash`, `conflict` and `throttle` are aimed at the k-th write of a step. */
export type FaultKind = 'crash' | 'stale' | 'unobserved' | 'pause' | 'conflict' | 'throttle';

/** Every kind, in the order trials of a short budget cover them. */
export const FAULT_KINDS: readonly FaultKind[] = ['crash', 'stale', 'unobserved', 'pause', 'conflict', 'throttle'];

/** One fault of a trial: its kind, the scenario step (0-based) and, for counted kinds, which write (1-based). */
export interface Fault {
  /** What the fault does. */
  readonly kind: FaultKind;
  /** The step of the scenario it is put into (0-based). */
  readonly step: number;
  /** For `crash`, `conflict` and `throttle`: which write of the step (1-based). */
  readonly k?: number;
}

/** `crash@2`, `stale`. */
export const describeFault = (f: Fault): string => (f.k === undefined ? f.kind : `${f.kind}@${f.k}`);

/** Whether a write of `info` counts for a trial in `namespace`: the operator's state, there or cluster-scoped. */
export function counts(info: RequestInfo, namespace: string): boolean {
  if (!isWrite(info.verb) || BOOKKEEPING_RESOURCES.has(info.resource ?? '')) return false;
  return info.namespace === undefined || info.namespace === namespace;
}

/** A fault armed for a step: the hooks the system calls, and whether its actions are over. */
export interface ArmedFault {
  readonly hooks: WriteHooks;
  /** Called once the step's own change was made: the faults that act from the start of the step act now. */
  begin(): void;
  /** Whether it fired. */
  readonly fired: boolean;
  /** Whether an action of it is still going on (a replica paused, watches held); the step is not judged meanwhile. */
  readonly busy: boolean;
  /** Ends what is still going on (continues a paused replica, releases held watches). */
  end(): void;
}

/** What a fault's actions use: its system, and the counters and watch holds of its arming. */
interface Tools {
  readonly system: ChaosSystem;
  readonly fault: Fault;
  readonly all: readonly number[];
  /** Whether `info` is the write the fault aims at (the k-th that counts; the first when it has no k). */
  aimed(info: RequestInfo): boolean;
  /** Runs an action of the fault (it fired; busy until the action is over). */
  act(action: () => Promise<unknown>): Promise<void>;
  /** The resources (plurals) of the project's own kinds. */
  readonly roots: ReadonlySet<string>;
  hold(which: readonly number[], watches?: (info: RequestInfo) => boolean): void;
  release(coalesce: boolean): void;
  fire(): void;
}

/** The hooks of each kind, and what it does when the step's change was made. */
function behaviour(t: Tools): { hooks: WriteHooks; begin: () => void } {
  const { system, fault, all } = t;
  switch (fault.kind) {
    case 'crash':
      return {
        hooks: { applied: (r, info) => (t.aimed(info) ? t.act(async () => system.replicas[r]?.kill()) : undefined) },
        begin: () => {},
      };
    case 'conflict':
    case 'throttle': {
      const answer: ProxyAnswer = { code: fault.kind === 'conflict' ? 409 : 429 };
      const aimedAt = (_r: number, info: RequestInfo) => {
        if (!t.aimed(info)) return undefined;
        t.fire();
        return answer;
      };
      return { hooks: { answer: aimedAt }, begin: () => {} };
    }
    case 'pause': {
      const pause = async (r: number) => {
        await sleep(0); // the write's answer first: the replica stops after it has it
        system.replicas[r]?.pause();
        await sleep(CHAOS_LEASE.durationMs + 2_000);
        system.replicas[r]?.resume();
      };
      return { hooks: { applied: (r, info) => void (t.aimed(info) && t.act(() => pause(r))) }, begin: () => {} };
    }
    case 'unobserved': {
      const lag = async (r: number) => {
        t.hold([r], (info) => !t.roots.has(info.resource ?? ''));
        await sleep(3_000);
        t.release(true);
      };
      return { hooks: { applied: (r, info) => void (t.aimed(info) && t.act(() => lag(r))) }, begin: () => {} };
    }
    case 'stale': {
      const failover = async (r: number) => {
        await system.replicas[r]?.kill();
        const deadline = Date.now() + 4 * CHAOS_LEASE.durationMs;
        while (Date.now() < deadline && [undefined, r].includes(system.leader()?.replica)) await sleep(100);
        await sleep(2_000);
        t.release(false);
      };
      return {
        hooks: { applied: (r, info) => (t.aimed(info) ? t.act(() => failover(r)) : undefined) },
        begin: () => t.hold(all.filter((i) => i !== system.leader()?.replica)),
      };
    }
  }
}

/** Arms `fault` on `system` for a step run in `namespace`. */
export function arm(system: ChaosSystem, fault: Fault, namespace: string, roots: ReadonlySet<string>): ArmedFault {
  const all = system.replicas.map((_, i) => i);
  let seen = 0;
  let fired = false;
  let running = 0;
  let held: readonly number[] = [];
  const release = (coalesce: boolean) => {
    for (const i of held) system.proxies[i]?.releaseWatches({ coalesce });
    held = [];
  };
  const { hooks, begin } = behaviour({
    system,
    fault,
    all,
    roots,
    aimed: (info) => !fired && counts(info, namespace) && ++seen === (fault.k ?? 1),
    act: (action) => {
      fired = true;
      running++;
      return action().then(
        () => void running--,
        () => void running--,
      );
    },
    hold: (which, watches) => {
      held = which;
      for (const i of which) system.proxies[i]?.holdWatches(watches);
    },
    release,
    fire: () => {
      fired = true;
    },
  });
  return {
    hooks,
    begin,
    get fired() {
      return fired;
    },
    get busy() {
      return running > 0;
    },
    end() {
      for (const i of all) system.replicas[i]?.resume();
      release(false);
    },
  };
}
