/**
 * @module chaos/leases
 * Who held the operator's Leases, and when, as a watch of the Leases of its namespace saw it (`LeaseBook`): the
 * leader-election Lease, and for a sharded operator each shard's fence Lease (`<ring>-shard-<n>`, labelled
 * `opkit.dev/shard-role: shard`); member Leases say who is in the ring but not who may write, so they are left out.
 * A holder identity names its replica by the `POD_NAME` it starts with (`chaos-1_<uuid>` for leader election,
 * `chaos-1-<5 chars>` for sharding); each process of a replica makes a new identity. A sharded fleet operator has a
 * second ring, its member clusters' (`<ring>-fleet`, labelled so by `opkit.dev/shard-ring`): its fences are
 * `fleetFences`, and `clusterShard(name)` says which of them a member cluster is in.
 *
 * Guarantees: holders are kept in the order the watch saw them, one entry per change; `heldBy` answers for a replica's
 * process (an identity first seen after that process started), so a Lease still held in the name of a killed process
 * never counts for its successor. What it cannot see: a change undone before the watch delivered it.
 */

/** One holder of a Lease, from when the watch saw it. */
export interface LeaseHolder {
  /** The holder's identity (`""`: nobody). */
  readonly identity: string;
  /** The replica whose process it names, if one does. */
  readonly replica: number | undefined;
  /** When the watch saw it (ms since the epoch). */
  readonly at: number;
}

/** A Lease as the watch delivers it. */
export interface WatchedLease {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly holder: string;
}

const FENCE = /-shard-(\d+)$/;
/** The suffix of a fleet's ring (`@opkit/runtime/multicluster`'s `FLEET_RING`). */
const FLEET = '-fleet';

/**
 * The shard of a fleet's ring that member cluster `name` is in: the top 5 bits of the 64-bit FNV-1a hash of its name,
 * mixed by murmur3's finalizer, as `@opkit/runtime/multicluster`'s `clusterShard` (leases.test.ts holds both to the
 * same values).
 */
export function clusterShard(name: string): number {
  let h = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(name)) h = ((h ^ BigInt(byte)) * 0x100000001b3n) & MASK64;
  h = ((h ^ (h >> 33n)) * 0xff51afd7ed558ccdn) & MASK64;
  h = ((h ^ (h >> 33n)) * 0xc4ceb9fe1a85ec53n) & MASK64;
  return Number((h ^ (h >> 33n)) >> 59n);
}
const MASK64 = 0xffffffffffffffffn;

/** A replica's `POD_NAME`: `chaos-0`, `chaos-1`, … */
export const replicaName = (i: number): string => `chaos-${i}`;

/** The replica an identity names (`chaos-1_…`, `chaos-1-…`), if any of `count`. */
export function replicaOf(identity: string, count: number): number | undefined {
  const i = Number(REPLICA_IDENTITY.exec(identity)?.[1] ?? Number.NaN);
  return Number.isInteger(i) && i < count ? i : undefined;
}

/** `chaos-<i>_…` (leader election) or `chaos-<i>-…` (sharding), `<i>` without leading zeros. */
const REPLICA_IDENTITY = /^chaos-(0|[1-9]\d*)[_-]/;

/** Each Lease's holders over time; see the module comment. */
export class LeaseBook {
  /** The leader-election Lease's holders. */
  readonly leader: LeaseHolder[] = [];
  /** Each ring's fences (by its `opkit.dev/shard-ring` label), each shard's holders by shard. */
  readonly #rings = new Map<string, Map<number, LeaseHolder[]>>();
  readonly #firstSeen = new Map<string, number>();
  readonly #replicas: number;

  constructor(replicas: number) {
    this.#replicas = replicas;
  }

  /** Records what the watch saw of `lease` at `at`. */
  observe(lease: WatchedLease, at: number): void {
    if (lease.labels['opkit.dev/shard-role'] === 'member') return;
    const shard = lease.labels['opkit.dev/shard-role'] === 'shard' ? FENCE.exec(lease.name)?.[1] : undefined;
    let history = this.leader;
    if (shard !== undefined) {
      const ring = lease.labels['opkit.dev/shard-ring'] ?? '';
      const fences = this.#rings.get(ring) ?? new Map<number, LeaseHolder[]>();
      this.#rings.set(ring, fences);
      history = fences.get(Number(shard)) ?? [];
      fences.set(Number(shard), history);
    }
    if (history.length > 0 && history.at(-1)?.identity === lease.holder) return;
    if (lease.holder !== '' && !this.#firstSeen.has(lease.holder)) this.#firstSeen.set(lease.holder, at);
    history.push({ identity: lease.holder, replica: replicaOf(lease.holder, this.#replicas), at });
  }

  /** The objects' ring: each shard's fence holders, by shard (the ring that is not another's `-fleet`). */
  get fences(): ReadonlyMap<number, LeaseHolder[]> {
    return this.#ring(false);
  }

  /** A sharded fleet's ring (`<ring>-fleet`): each shard's fence holders, by shard (none without one). */
  get fleetFences(): ReadonlyMap<number, LeaseHolder[]> {
    return this.#ring(true);
  }

  /** The fleet's ring (another ring's name and `-fleet`), or the other one. */
  #ring(fleet: boolean): ReadonlyMap<number, LeaseHolder[]> {
    const isFleet = (r: string) => r.endsWith(FLEET) && this.#rings.has(r.slice(0, -FLEET.length));
    const ring = [...this.#rings.keys()].find((r) => isFleet(r) === fleet);
    return (ring === undefined ? undefined : this.#rings.get(ring)) ?? new Map();
  }

  /** When `identity` was first seen holding a Lease (its process started before that). */
  firstSeen(identity: string): number {
    return this.#firstSeen.get(identity) ?? 0;
  }

  /**
   * Whether the process of `replica` that started at `started` held the Lease of `history` at some moment within
   * `slackMs` of `at` (slack for the watch, which sees a change a moment after it).
   */
  heldBy(history: readonly LeaseHolder[], replica: number, started: number, at: number, slackMs: number): boolean {
    const from = at - slackMs;
    const before = history.findLast((h) => h.at <= from);
    const during = history.filter((h) => h.at > from && h.at <= at + slackMs);
    return [...(before ? [before] : []), ...during].some(
      (h) => h.replica === replica && h.identity !== '' && this.firstSeen(h.identity) >= started,
    );
  }

  /** The holder of `history` at `at` (the last change the watch saw by then). */
  static holderAt(history: readonly LeaseHolder[], at: number): LeaseHolder | undefined {
    return history.findLast((h) => h.at <= at);
  }
}
