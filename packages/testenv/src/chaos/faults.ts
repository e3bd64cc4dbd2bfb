/**
 * @module chaos/faults
 * The faults a trial puts into one step of a scenario, each aimed at a bug class that Sieve and Acto report:
 * - `crash@k`: the replica that made the step's k-th write is killed (SIGKILL) right after the apiserver applied it,
 *   before the replica has the answer: the state between two writes of a reconcile is what the next leader finds.
 * - `stale`: the standby's watches are held from the start of the step; the leader is killed after its first write,
 *   so the standby takes over with a view that misses the step, and sees it 2 s after it leads. Sharded: the other
 *   replicas' watches are held from the writer's first write; the writer is killed, and they see what they missed 2 s
 *   after its shards moved to them.
 * - `unobserved`: from the step's first write, the writer's watches of every kind but the project's own (its
 *   children's) are held for 3 s, then delivered coalesced per object: it reconciles on its own objects' events while
 *   it does not see what it made (one informer lags behind another), and never sees the states in between.
 * - `pause`: the leader is stopped (SIGSTOP) after its first write of the step, past its Lease (the standby takes
 *   over), then continued: it must notice before it writes again.
 * - `conflict@k`, `throttle@k`: the step's k-th write is answered 409 Conflict, or 429 Too Many Requests, by the
 *   proxy; the apiserver never sees it.
 * - `apiserver-restart`: after the step's first write was applied, the kube-apiserver is stopped, kept down for 2 s
 *   and started again: every replica's requests fail meanwhile, its Lease cannot be renewed, and its watches break
 *   and must resume from where they were. The fault is busy until the control plane itself recovered
 *   (chaos/recovery: the CRDs served again, the controller-manager restarted, a canary pod scheduled, Ready and
 *   removed), so a step is judged on the operator's recovery, not on the built-in controllers'.
 * - `compaction`: after the step's first write, etcd is compacted to its current revision and the apiserver restarted
 *   (as above, its watch cache emptied): the watches resume from a compacted resourceVersion, get 410 Gone and must
 *   list again.
 * - `disconnect`: the writer's proxy drops every connection it has open, to the replica and to the apiserver, as
 *   the step's first write was applied and before its answer: the replica sees that write fail (applied, its answer
 *   lost), and its other requests and every watch end.
 * - `webhook-down`: once the step's change was made, the webhook Service is down for 3 s (its connections closed,
 *   new ones closed at once): the apiserver refuses the writes that need an admission webhook (`failurePolicy:
 *   Fail`) and the reads that need a conversion. It stays busy 5 s after the Service is back, for the operator's
 *   retries after its back-off. Only for a project with webhooks (the plan leaves it out otherwise).
 * - `member-away` (a fleet operator's run, chaos/members): right after the step's first write in a member, that member
 *   leaves the fleet (its kubeconfig is removed from every replica's folder) for 3 s, then comes back: the operator
 *   disengages it, engages it anew, and must catch up with what changed meanwhile. Busy 5 s more, for the provider's
 *   next read and the engagement.
 * - `member-down`: right after the step's first write in a member, that member's apiserver is stopped for 3 s and
 *   started again (busy until its control plane recovered, and 5 s more for the retries): the member stays in the
 *   fleet, unreachable, while the others go on.
 *
 * Only the operator's writes of the trial's own namespace (and of cluster-scoped objects) count, never a Lease or an
 * Event. Guarantees: a fault fires at most once per trial, and no action starts after `end()`; it is `busy` while an
 * action it took is going on (a replica paused, watches held, the apiserver restarting until it is ready, the webhook
 * Service down, a member away or down), so the runner judges a step only after its fault ended; `end()` continues
 * what is paused, releases what is held, brings the webhook Service back and every member into the fleet, whatever
 * happened. Caveat: a restart of the apiserver cannot be
 * undone; `end()` leaves one that is still under way to finish (it runs only when a step failed before its fault
 * was over); the same holds for a member's apiserver.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProxyAnswer } from './api-proxy.ts';
import { BOOKKEEPING_RESOURCES } from './convergence.ts';
import { controlPlaneRecovered } from './recovery.ts';
import type { RequestInfo } from './request-info.ts';
import { isWrite } from './request-info.ts';
import type { WebhookService } from './service.ts';
import { CHAOS_LEASE, type ChaosSystem, type WriteHooks } from './system.ts';

/** A fault's kind; `crash`, `conflict` and `throttle` are aimed at the k-th write of a step. */
export type FaultKind =
  | 'crash'
  | 'stale'
  | 'unobserved'
  | 'pause'
  | 'conflict'
  | 'throttle'
  | 'apiserver-restart'
  | 'compaction'
  | 'disconnect'
  | 'webhook-down'
  | 'member-away'
  | 'member-down';

/** Every kind, in the order trials of a short budget cover them. */
export const FAULT_KINDS: readonly FaultKind[] = [
  'crash',
  'stale',
  'unobserved',
  'pause',
  'conflict',
  'throttle',
  'apiserver-restart',
  'compaction',
  'disconnect',
  'webhook-down',
  'member-away',
  'member-down',
];

/** The kinds that need the project to have webhooks (a webhook configuration or a conversion webhook). */
export const WEBHOOK_FAULT_KINDS: ReadonlySet<FaultKind> = new Set(['webhook-down']);

/** The kinds that need member clusters (a fleet operator's run, chaos/members); aimed at writes in a member. */
export const MEMBER_FAULT_KINDS: ReadonlySet<FaultKind> = new Set(['member-away', 'member-down']);

/** How long `apiserver-restart` and `compaction` keep the apiserver down, and `webhook-down` the Service. */
const APISERVER_DOWN_MS = 2_000;
const WEBHOOK_DOWN_MS = 3_000;
/** How long `member-away` keeps a member out of the fleet, and `member-down` its apiserver down. */
const MEMBER_AWAY_MS = 3_000;
/** How long `webhook-down` stays busy once the Service is back: an operator's back-off after the refused requests. */
const RETRY_GRACE_MS = 5_000;

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
  /**
   * Whether an action of it is still going on (a replica paused, watches held, the apiserver restarting, the webhook
   * Service down); the step is not judged meanwhile.
   */
  readonly busy: boolean;
  /** Ends what is still going on (continues a paused replica, releases held watches, brings the webhooks back). */
  end(): void;
}

/** What a fault's actions use: its system, and the counters and watch holds of its arming. */
interface Tools {
  readonly system: ChaosSystem;
  readonly fault: Fault;
  readonly all: readonly number[];
  /**
   * Whether `info` (made in member `cluster`, absent for the hub) is the write the fault aims at: the k-th that
   * counts (the first when it has no k); for a member's kind, of those made in a member.
   */
  aimed(info: RequestInfo, cluster?: string): boolean;
  /** Runs an action of the fault (it fired; busy until the action is over); none once the fault ended. */
  act(action: () => Promise<unknown>): Promise<void>;
  /** The resources (plurals) of the project's own kinds. */
  readonly roots: ReadonlySet<string>;
  hold(which: readonly number[], watches?: (info: RequestInfo) => boolean): void;
  release(coalesce: boolean): void;
  fire(): void;
}

/** What a kind does: the hooks the system calls, and what it does once the step's change was made. */
interface Behaviour {
  readonly hooks: WriteHooks;
  readonly begin: () => void;
}

/**
 * Runs `action` for the replica that made the aimed write (and the member it made it in), once the apiserver applied
 * it, without holding its answer.
 */
const afterAimed = (t: Tools, action: (replica: number, cluster?: string) => Promise<unknown>): Behaviour => ({
  hooks: { applied: (r, info, cluster) => void (t.aimed(info, cluster) && t.act(() => action(r, cluster))) },
  begin: () => {},
});

/** The kinds that act on the platform (the control plane, the connections, the webhook Service, the members). */
type PlatformKind = Extract<
  FaultKind,
  'apiserver-restart' | 'compaction' | 'disconnect' | 'webhook-down' | 'member-away' | 'member-down'
>;

/**
 * The platform's kinds (their trials are planned more sparsely: chaos/plan). The members' faults act on the platform
 * too, but are what a fleet operator's run is for: they are planned as often as the operator's own.
 */
export const PLATFORM_FAULT_KINDS: ReadonlySet<FaultKind> = new Set<PlatformKind>([
  'apiserver-restart',
  'compaction',
  'disconnect',
  'webhook-down',
]);

/** The hooks of each kind, and what it does when the step's change was made. */
function behaviour(t: Tools): Behaviour {
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
    case 'pause':
      return afterAimed(t, async (r) => {
        await sleep(0); // the write's answer first: the replica stops after it has it
        const replica = system.replicas[r];
        if (replica?.running) await replica.pause();
        await sleep(CHAOS_LEASE.durationMs + 2_000);
        system.replicas[r]?.resume();
      });
    case 'unobserved':
      return afterAimed(t, async (r) => {
        t.hold([r], (info) => !t.roots.has(info.resource ?? ''));
        await sleep(3_000);
        t.release(true);
      });
    case 'stale': {
      const failover = async (r: number) => {
        // sharded, the writer is known only now: the others miss what it wrote from here on
        if (system.sharded) t.hold(all.filter((i) => i !== r));
        const shards = system.sharded ? heldShards(system, r) : [];
        await system.replicas[r]?.kill();
        const deadline = Date.now() + 4 * CHAOS_LEASE.durationMs;
        const moved = () =>
          system.sharded
            ? shards.every((s) => ![undefined, r].includes(system.leases.fences.get(s)?.at(-1)?.replica))
            : ![undefined, r].includes(system.leader()?.replica);
        while (Date.now() < deadline && !moved()) await sleep(100);
        await sleep(2_000);
        t.release(false);
      };
      return {
        hooks: { applied: (r, info) => (t.aimed(info) ? t.act(() => failover(r)) : undefined) },
        begin: () => (system.sharded ? undefined : t.hold(all.filter((i) => i !== system.leader()?.replica))),
      };
    }
    default:
      return platformBehaviour(t, fault.kind);
  }
}

/** The shards whose fence replica `r` holds now. */
const heldShards = (system: ChaosSystem, r: number): number[] =>
  [...system.leases.fences].filter(([, history]) => history.at(-1)?.replica === r).map(([shard]) => shard);

/** The platform's faults: the apiserver restarted (etcd compacted first), connections reset, the webhooks down. */
function platformBehaviour(t: Tools, kind: PlatformKind): Behaviour {
  const { env, proxies } = t.system;
  const restart = async () => {
    await env.restart('kube-apiserver', { downMs: APISERVER_DOWN_MS });
    await controlPlaneRecovered(env);
  };
  switch (kind) {
    case 'apiserver-restart':
      return afterAimed(t, async () => {
        await sleep(0); // the write's answer first
        await restart();
      });
    case 'compaction':
      return afterAimed(t, async () => {
        await sleep(0);
        await env.compactEtcd();
        await restart(); // the watch cache, which still covers the compacted revisions, goes with it
      });
    case 'disconnect': // at once: the write's answer is lost too
      return afterAimed(t, async (r, cluster) =>
        (cluster === undefined ? proxies[r] : t.system.fleet?.member(cluster)?.proxies[r])?.resetConnections(),
      );
    case 'webhook-down': {
      const outage = async (service: WebhookService) => {
        service.down(true);
        await sleep(WEBHOOK_DOWN_MS);
        service.down(false);
        await sleep(RETRY_GRACE_MS); // the retries of what was refused, after the operator's back-off
      };
      const begin = () => {
        const service = t.system.webhookService;
        if (service !== undefined) void t.act(() => outage(service));
      };
      return { hooks: {}, begin };
    }
    case 'member-away':
      return afterAimed(t, async (_r, cluster) => {
        const fleet = t.system.fleet;
        if (fleet === undefined || cluster === undefined) return;
        await fleet.away(cluster, true);
        await sleep(MEMBER_AWAY_MS);
        await fleet.away(cluster, false);
        await sleep(RETRY_GRACE_MS); // the provider's next read, and the member engaged again
      });
    case 'member-down':
      return afterAimed(t, async (_r, cluster) => {
        const member = cluster === undefined ? undefined : t.system.fleet?.member(cluster);
        if (member === undefined) return;
        await sleep(0); // the write's answer first
        await member.env.restart('kube-apiserver', { downMs: MEMBER_AWAY_MS });
        await controlPlaneRecovered(member.env);
        await sleep(RETRY_GRACE_MS); // the member controllers' retries, after their back-off
      });
  }
}

/** Arms `fault` on `system` for a step run in `namespace`. */
export function arm(system: ChaosSystem, fault: Fault, namespace: string, roots: ReadonlySet<string>): ArmedFault {
  const all = system.replicas.map((_, i) => i);
  let seen = 0;
  let fired = false;
  let ended = false;
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
    aimed: (info, cluster) =>
      !fired &&
      counts(info, namespace) &&
      (cluster !== undefined || !MEMBER_FAULT_KINDS.has(fault.kind)) &&
      ++seen === (fault.k ?? 1),
    act: (action) => {
      if (ended) return Promise.resolve();
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
      ended = true;
      for (const i of all) system.replicas[i]?.resume();
      release(false);
      system.webhookService?.down(false);
      void system.fleet?.back().catch(() => {}); // the trial's end awaits it (and any write still under way)
    },
  };
}
