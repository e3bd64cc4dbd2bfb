/**
 * @module chaos/fences
 * What the apiserver's audit log proves about the sharded operator (pure: audit events in, findings out).
 *
 * Guarantees, for the events given (the operator's, with the bodies the sharded chaos audit policy records):
 * - fence: every successful write a replica made to a pod or an AppService (any subresource), or to an Event about
 *   one, was received by the apiserver while that replica's current process held the fence Lease of the object's
 *   bucket, and completed before the fence passed on (within `slackMs`: the audit stamps a response's completion a
 *   moment after the client may already have it). The holder of each fence over time is rebuilt from the successful
 *   creates, updates and patches of `appservice-operator-shard-<b>` (the holder their response or request body
 *   names); a write is judged at the moment the apiserver received it. So no two replicas ever acted on one
 *   object at the same time;
 * - membership: a bucket taken from a holder that had not released it (its fence written to another holder, or freed
 *   to "" by another process) was taken only after the holder's own member Lease writes had stopped for the lease
 *   duration (less `slackMs`);
 * - shard-label: every such write can be tied to a bucket (the `opkit.dev/shard` label of the object, or of the pod
 *   or AppService an Event is about; under the `server` filter an AppService's bucket is its uid's hash).
 * A replica is named by its user agent (audit.ts `replicaOf`), a process by its identity (`<replica>-<5 chars>`), and
 * which process of a replica made a write by its own lease writes (a member Lease or fence naming its identity),
 * cut at each process start the harness recorded.
 * Caveats: without bodies (a Metadata-level audit policy) a fence holder is inferred: a fence write by a replica
 * holding it releases it, any other acquires it for some process of that replica, and processes of one replica are
 * not told apart. Timestamps are the apiserver's, read to the microsecond.
 */
import { uidShard } from '@opkit/runtime/sharding';
import { replicaOf } from './audit.ts';
import { type BodyEvent, body, isOperatorWrite } from './audit-bodies.ts';
import type { Violation } from './monitor.ts';

/** The shard ring of the AppService operator, as the runtime's sharding contract names it. */
export const RING = 'appservice-operator';
export const BUCKETS = 32;
export const SHARD_LABEL = 'opkit.dev/shard';
/**
 * How the replicas select their shards (`--sharding-filter`): `labels` (an object's bucket is its label, a child's its
 * owner's) or `server` (an AppService's bucket is its uid's hash, `uidShard`, and it carries no label; a pod carries
 * `u<bucket>`).
 */
export type ShardFilter = 'labels' | 'server';
/** The runtime's default membership timings. */
export const TIMINGS = { leaseSeconds: 15, renewDeadlineSeconds: 10, retrySeconds: 2 } as const;
export const fenceName = (bucket: number): string => `${RING}-shard-${bucket}`;
export const memberName = (identity: string): string => `${RING}-member-${identity}`;
const FENCE = /^appservice-operator-shard-(\d+)$/;
const MEMBER = /^appservice-operator-member-(.+)$/;
/** An inferred holder: some process of the replica, which one unknown. */
const SOME_PROCESS = '*****';

/** Microseconds since the epoch of an RFC 3339 timestamp (the audit log's have microseconds); NaN if absent. */
export function micros(ts: string | undefined): number {
  if (!ts) return Number.NaN;
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(ts);
  if (!m) return Date.parse(ts) * 1000;
  return Date.parse(`${m[1]}${m[3]}`) * 1000 + Number((m[2] ?? '').padEnd(6, '0').slice(0, 6));
}

const iso = (us: number) => new Date(Math.floor(us / 1000)).toISOString();

/** The replica (POD_NAME) a member identity belongs to. */
export const podOf = (identity: string): string => identity.replace(/-[a-z0-9*]{5}$/, '');

export const fenceBucket = (name: string | undefined): number | undefined => {
  const m = FENCE.exec(name ?? '');
  return m ? Number(m[1]) : undefined;
};

/** One successful write of a fence Lease: who holds the bucket from `at` on. */
export interface FenceChange {
  readonly bucket: number;
  /** When the apiserver received it (µs). */
  readonly at: number;
  readonly holder: string;
  /** The replica that wrote it. */
  readonly by: string;
  readonly inferred: boolean;
}

/** The holder a fence write left, from its bodies; undefined when the policy recorded none. */
function writtenHolder(e: BodyEvent): string | undefined {
  const res = body(e.responseObject);
  if (res?.metadata) return res.spec?.holderIdentity ?? '';
  const req = body(e.requestObject);
  if (req?.spec && 'holderIdentity' in req.spec) return req.spec.holderIdentity ?? '';
  return req?.metadata && e.verb !== 'patch' ? '' : undefined;
}

/** Each fence's changes of holder, in the order the apiserver received them (writes that keep the holder dropped). */
export function fenceTimeline(events: readonly BodyEvent[]): Map<number, FenceChange[]> {
  const out = new Map<number, FenceChange[]>();
  const writes = events
    .filter((e) => isOperatorWrite(e) && e.verb !== 'delete' && e.objectRef?.resource === 'leases')
    .filter((e) => fenceBucket(e.objectRef?.name) !== undefined)
    .sort((a, b) => micros(a.requestReceivedTimestamp) - micros(b.requestReceivedTimestamp));
  for (const e of writes) {
    const bucket = fenceBucket(e.objectRef?.name) as number;
    const by = replicaOf(e) as string;
    const list = out.get(bucket) ?? [];
    const last = list[list.length - 1]?.holder ?? '';
    let holder = writtenHolder(e);
    const inferred = holder === undefined;
    if (holder === undefined) holder = last !== '' && podOf(last) === by ? '' : `${by}-${SOME_PROCESS}`;
    if (holder === last && list.length > 0) continue;
    list.push({ bucket, at: micros(e.requestReceivedTimestamp), holder, by, inferred });
    out.set(bucket, list);
  }
  return out;
}

/** A label value's bucket: `"<n>"` under the labels filter, `"u<n>"` under server; undefined for anything else. */
export function labelBucket(v: string | undefined, filter: ShardFilter = 'labels'): number | undefined {
  const digits = filter === 'server' ? (v?.startsWith('u') ? v.slice(1) : undefined) : v;
  const n = Number(digits);
  return digits !== undefined && /^\d+$/.test(digits) && n < BUCKETS ? n : undefined;
}

/** The bucket of an object of `resource`: an AppService's uid hash under `server`, else its label's. */
export function bucketOfObject(
  resource: string,
  o: { readonly metadata?: { readonly uid?: string; readonly labels?: Readonly<Record<string, string>> } } | undefined,
  filter: ShardFilter = 'labels',
): number | undefined {
  if (filter === 'server' && resource === 'appservices') return o?.metadata?.uid ? uidShard(o.metadata.uid) : undefined;
  return labelBucket(o?.metadata?.labels?.[SHARD_LABEL], filter);
}
const nameKey = (resource: string, namespace: string | undefined, name: string | undefined) =>
  `${resource}/${namespace ?? ''}/${name ?? ''}`;
const RESOURCE_OF_KIND: Record<string, string> = { Pod: 'pods', AppService: 'appservices' };
const SHARDED = new Set(['pods', 'appservices']);

/** Every pod's and AppService's bucket, by UID and by `resource/namespace/name`, from the labels the bodies show. */
export function objectBuckets(events: readonly BodyEvent[], filter: ShardFilter = 'labels'): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of events) {
    const resource = e.objectRef?.resource ?? '';
    if (!SHARDED.has(resource)) continue;
    for (const o of [body(e.responseObject), body(e.requestObject)]) {
      const b = bucketOfObject(resource, o, filter);
      if (b === undefined) continue;
      if (o?.metadata?.uid) out.set(o.metadata.uid, b);
      const name = o?.metadata?.name || e.objectRef?.name;
      if (name) out.set(nameKey(resource, o?.metadata?.namespace ?? e.objectRef?.namespace, name), b);
    }
  }
  return out;
}

/** What a write is about and its bucket: a pod or AppService, or the one an Event is about; undefined if neither. */
export function subjectOf(
  e: BodyEvent,
  buckets: ReadonlyMap<string, number>,
  filter: ShardFilter = 'labels',
): { readonly what: string; readonly bucket: number | undefined } | undefined {
  const r = e.objectRef;
  const resource = r?.resource ?? '';
  const res = body(e.responseObject);
  const req = body(e.requestObject);
  if (SHARDED.has(resource)) {
    const name = r?.name || res?.metadata?.name || req?.metadata?.name || '?';
    const uid = res?.metadata?.uid ?? req?.metadata?.uid;
    const bucket =
      bucketOfObject(resource, res, filter) ??
      bucketOfObject(resource, req, filter) ??
      (uid ? buckets.get(uid) : undefined) ??
      buckets.get(nameKey(resource, r?.namespace, name));
    return { what: `${e.verb} ${resource}${r?.subresource ? `/${r.subresource}` : ''}/${name}`, bucket };
  }
  if (resource !== 'events') return undefined;
  const about = res?.involvedObject ?? res?.regarding ?? req?.involvedObject ?? req?.regarding;
  const kindResource = RESOURCE_OF_KIND[about?.kind ?? ''];
  if (!about || !kindResource) return undefined;
  const bucket =
    (about.uid ? buckets.get(about.uid) : undefined) ?? buckets.get(nameKey(kindResource, r?.namespace, about.name));
  return { what: `${e.verb} an Event about ${kindResource}/${about.name ?? '?'}`, bucket };
}

/** The identity each replica's processes announced, from their own lease writes: `[µs, identity]`, in order. */
function announcedIdentities(events: readonly BodyEvent[]): Map<string, [number, string][]> {
  const out = new Map<string, [number, string][]>();
  for (const e of events) {
    if (!isOperatorWrite(e) || e.verb === 'delete' || e.objectRef?.resource !== 'leases') continue;
    const by = replicaOf(e) as string;
    const member = MEMBER.exec(e.objectRef.name ?? '')?.[1];
    const fence = fenceBucket(e.objectRef.name) !== undefined ? writtenHolder(e) : undefined;
    const identity = member ?? fence;
    if (!identity || podOf(identity) !== by) continue;
    const list = out.get(by) ?? [];
    list.push([micros(e.requestReceivedTimestamp), identity]);
    out.set(by, list);
  }
  for (const list of out.values()) list.sort((a, b) => a[0] - b[0]);
  return out;
}

/** Options of `fenceCheck`. */
export interface FenceCheckOptions {
  /** When each replica's processes started (ms since the epoch): an identity announced before does not carry over. */
  readonly starts?: ReadonlyMap<string, readonly number[]>;
  /** The audit's stamping slack (default 100 ms). */
  readonly slackMs?: number;
  /** The member lease duration (default `TIMINGS.leaseSeconds`). */
  readonly leaseSeconds?: number;
  /** How the replicas select their shards (default `labels`): what an object's bucket is. */
  readonly filter?: ShardFilter;
}

export interface Handoffs {
  readonly acquired: number;
  readonly released: number;
  readonly freed: number;
  readonly taken: number;
}

/** What `fenceCheck` found. */
export interface FenceFindings {
  readonly violations: Violation[];
  /** Writes checked against a fence. */
  readonly checked: number;
  /**
   * Fence changes: acquired (a holder set), released (set to "" by its holder), freed (set to "" by another process:
   * its holder judged dead), taken (a holder replaced by another, unreleased).
   */
  readonly handoffs: Handoffs;
}

/** The fence, membership and shard-label checks over the events (the whole log so far; see the module comment). */
export function fenceCheck(events: readonly BodyEvent[], options: FenceCheckOptions = {}): FenceFindings {
  const slack = (options.slackMs ?? 100) * 1000;
  const timeline = fenceTimeline(events);
  const filter = options.filter ?? 'labels';
  const buckets = objectBuckets(events, filter);
  const identities = announcedIdentities(events);
  const violations: Violation[] = [];
  let checked = 0;
  const writes = events
    .filter(isOperatorWrite)
    .sort((a, b) => micros(a.requestReceivedTimestamp) - micros(b.requestReceivedTimestamp));
  for (const e of writes) {
    const subject = subjectOf(e, buckets, filter);
    if (!subject) continue;
    const who = replicaOf(e) as string;
    const at = micros(e.requestReceivedTimestamp);
    if (subject.bucket === undefined) {
      violations.push({
        invariant: 'shard-label',
        detail: `${who} ${subject.what} at ${e.requestReceivedTimestamp}: no ${SHARD_LABEL} label tells its bucket`,
      });
      continue;
    }
    checked += 1;
    const process = identityAt(identities.get(who) ?? [], options.starts?.get(who) ?? [], at);
    const found = judgeWrite(
      timeline.get(subject.bucket) ?? [],
      { who, process, at, end: micros(e.stageTimestamp) },
      slack,
    );
    if (found)
      violations.push({
        invariant: 'fence',
        detail: `${who} ${subject.what} (bucket ${subject.bucket}) received ${e.requestReceivedTimestamp}: ${found}`,
      });
  }
  const writer = (c: FenceChange) => identityAt(identities.get(c.by) ?? [], options.starts?.get(c.by) ?? [], c.at);
  const minGap = (options.leaseSeconds ?? TIMINGS.leaseSeconds) * 1e6 - slack;
  violations.push(...earlyTakeovers(timeline, events, minGap, writer));
  return { violations, checked, handoffs: countHandoffs(timeline, writer) };
}

/** The identity the replica's process running at `at` announced by then; undefined before it announced one. */
function identityAt(announced: readonly [number, string][], starts: readonly number[], at: number): string | undefined {
  const started = Math.max(0, ...starts.map((s) => s * 1000).filter((s) => s <= at));
  let identity: string | undefined;
  for (const [t, id] of announced) if (t <= at && t >= started) identity = id;
  return identity;
}

/**
 * Why a write of `who`'s process at `at` (completed `end`) broke its bucket's fence, or undefined if it did not. A
 * write by a process that had held the fence before says when and how it lost it (a former holder still writing, as
 * one continued after a pause would).
 */
function judgeWrite(
  changes: readonly FenceChange[],
  w: { readonly who: string; readonly process: string | undefined; readonly at: number; readonly end: number },
  slack: number,
): string | undefined {
  const i = changes.findLastIndex((c) => c.at <= w.at);
  const held = changes[i];
  const next = changes[i + 1];
  if (!held) return 'no process had ever held the bucket';
  const since = `since ${iso(held.at)}`;
  const lost = formerHolding(changes.slice(0, i + 1), w);
  if (held.holder === '') {
    const prev = changes[i - 1];
    const how = !prev || podOf(prev.holder) === held.by ? 'released' : `freed by ${held.by}`;
    return `the bucket had been ${how} (${since}) and nobody held it${lost}`;
  }
  if (podOf(held.holder) !== w.who) return `${held.holder} held the bucket (${since})${lost}`;
  const someProcess = held.holder.endsWith(SOME_PROCESS);
  if (!someProcess && w.process !== held.holder)
    return `the bucket was held by ${held.holder} (${since}), not by the writing process (${w.process ?? 'one that had not joined yet'})`;
  if (next && w.end > next.at + slack)
    return `it completed ${iso(w.end)}, after the bucket passed to ${next.holder || '"" (released)'} at ${iso(next.at)}`;
  return undefined;
}

/** `; the writing process … had held it until …`, if the writing process held the fence before `changes` ended. */
function formerHolding(
  changes: readonly FenceChange[],
  w: { readonly who: string; readonly process: string | undefined; readonly at: number },
): string {
  const j = w.process === undefined ? -1 : changes.findLastIndex((c) => c.holder === w.process);
  const lost = changes[j + 1];
  if (j < 0 || !lost) return '';
  const how = lost.holder ? `${lost.holder} took it` : lost.by === w.who ? 'it released it' : `${lost.by} freed it`;
  return `; the writing process ${w.process} had held it until ${iso(lost.at)} (${how}), ${((w.at - lost.at) / 1e6).toFixed(1)} s before: a former holder still writing`;
}

/**
 * Buckets taken from a holder that had not released them (another process took the fence, or freed it), sooner than
 * `minGap` µs after the holder's own last write to its member Lease; `writer` tells which process made a change.
 */
function earlyTakeovers(
  timeline: Map<number, FenceChange[]>,
  events: readonly BodyEvent[],
  minGap: number,
  writer: (c: FenceChange) => string | undefined,
): Violation[] {
  const renewals = new Map<string, number[]>();
  for (const e of events) {
    const identity = MEMBER.exec(e.objectRef?.name ?? '')?.[1];
    if (!identity || !isOperatorWrite(e) || e.verb === 'delete' || replicaOf(e) !== podOf(identity)) continue;
    renewals.set(identity, [...(renewals.get(identity) ?? []), micros(e.stageTimestamp)]);
  }
  const out: Violation[] = [];
  for (const changes of timeline.values())
    for (let i = 1; i < changes.length; i++) {
      const prev = changes[i - 1] as FenceChange;
      const cur = changes[i] as FenceChange;
      if (prev.holder === '' || prev.inferred || cur.inferred || writer(cur) === prev.holder) continue;
      const last = Math.max(...(renewals.get(prev.holder) ?? []).filter((t) => t <= cur.at));
      if (Number.isFinite(last) && cur.at - last < minGap)
        out.push({
          invariant: 'membership',
          detail: `${cur.holder ? `${cur.holder} took` : `${writer(cur) ?? cur.by} freed`} bucket ${cur.bucket} from ${prev.holder} at ${iso(cur.at)}, ${((cur.at - last) / 1e6).toFixed(2)} s after ${prev.holder}'s member Lease last changed`,
        });
    }
  return out;
}

/** Acquired: a holder set; released: "" set by the holder; freed: "" set by another; taken: a holder replaced. */
function countHandoffs(
  timeline: Map<number, FenceChange[]>,
  writer: (c: FenceChange) => string | undefined,
): FenceFindings['handoffs'] {
  const n = { acquired: 0, released: 0, freed: 0, taken: 0 };
  for (const changes of timeline.values())
    changes.forEach((c, i) => {
      const prev = changes[i - 1]?.holder ?? '';
      if (c.holder !== '') {
        n.acquired += 1;
        if (prev !== '') n.taken += 1;
      } else if (prev !== '' && !c.inferred && writer(c) !== prev) n.freed += 1;
      else n.released += 1;
    });
  return n;
}

/** The holder of every bucket at `at` (µs) by the timeline: "" for a released or never-held one. */
export function holdersAt(timeline: ReadonlyMap<number, readonly FenceChange[]>, at: number): string[] {
  return Array.from({ length: BUCKETS }, (_, b) => (timeline.get(b) ?? []).findLast((c) => c.at <= at)?.holder ?? '');
}
