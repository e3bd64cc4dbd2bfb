/**
 * @module chaos/ring
 * The harness's view of the AppService operator's shard ring, read from outside the operator: the fence Leases (who
 * holds each bucket now), the member Leases (which process of each replica is a live member), each replica's own
 * /metrics, and the shard labels of AppServices and their pods (by the filter the replicas run). The judgements (`ringProblems`,
 * `shardLabelProblems`, `parseMetrics`) are pure; `readRing`, `scrape` and `until` do the reading and waiting.
 * Caveats: a member is live while its Lease's renewTime is less than its leaseDurationSeconds old by the harness's
 * clock (the same host's as the apiserver's); a view is read with one list, so it is one moment of the apiserver's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@opkit/runtime/client';
import { type Lease, Leases, type Pod } from '@opkit/runtime/kinds';
import type { AppService } from '../src/api/v1alpha1/appservice.ts';
import { NAMESPACE } from '../src/install.ts';
import {
  BUCKETS,
  bucketOfObject,
  fenceBucket,
  labelBucket,
  micros,
  podOf,
  RING,
  SHARD_LABEL,
  type ShardFilter,
  TIMINGS,
} from './fences.ts';
import type { Violation } from './monitor.ts';

export const RING_LABEL = 'opkit.dev/shard-ring';
export const ROLE_LABEL = 'opkit.dev/shard-role';
const MEMBER = /^appservice-operator-member-(.+)$/;

/** One moment of the ring, as its Leases say. */
export interface RingView {
  /** When it was read (ms since the epoch). */
  readonly at: number;
  /** The holder of each bucket ("" released, or no fence yet). */
  readonly holders: readonly string[];
  /** Each member identity, and until when its Lease is valid (ms since the epoch). */
  readonly members: ReadonlyMap<string, number>;
  /** Each member identity, and when its Lease was last renewed (ms since the epoch, its renewTime). */
  readonly renewed: ReadonlyMap<string, number>;
  /** Ring Leases without the labels the contract gives them. */
  readonly unlabelled: readonly string[];
}

/** The ring's Leases, in the operator's namespace, read in one list. */
export async function readRing(admin: Client): Promise<RingView> {
  const leases = (await admin.list(Leases, { namespace: NAMESPACE })).items;
  return ringOf(leases, Date.now());
}

/** The ring as `leases` tell it at `at`. */
export function ringOf(leases: readonly Lease[], at: number): RingView {
  const holders = Array.from({ length: BUCKETS }, () => '');
  const members = new Map<string, number>();
  const renewed = new Map<string, number>();
  const unlabelled: string[] = [];
  for (const l of leases) {
    const name = l.metadata.name ?? '';
    const bucket = fenceBucket(name);
    const identity = MEMBER.exec(name)?.[1];
    if (bucket === undefined && identity === undefined) continue;
    const labels = l.metadata.labels ?? {};
    if (labels[RING_LABEL] !== RING || labels[ROLE_LABEL] !== (bucket !== undefined ? 'shard' : 'member'))
      unlabelled.push(name);
    if (bucket !== undefined) holders[bucket] = l.spec?.holderIdentity ?? '';
    else if (identity !== undefined) {
      const renewedAt = micros(l.spec?.renewTime ?? l.spec?.acquireTime ?? l.metadata.creationTimestamp) / 1000;
      renewed.set(identity, renewedAt);
      members.set(identity, renewedAt + (l.spec?.leaseDurationSeconds ?? TIMINGS.leaseSeconds) * 1000);
    }
  }
  return { at, holders, members, renewed, unlabelled };
}

/** The live member identity of `replica`'s process (the latest renewed), if it has one. */
export function identityOf(view: RingView, replica: string): string | undefined {
  let best: [string, number] | undefined;
  for (const [identity, validUntil] of view.members)
    if (podOf(identity) === replica && validUntil > view.at && (!best || validUntil > best[1]))
      best = [identity, validUntil];
  return best?.[0];
}

/** The buckets `identity` holds. */
export const heldBy = (view: RingView, identity: string | undefined): number[] =>
  identity === undefined ? [] : view.holders.flatMap((h, b) => (h === identity ? [b] : []));

/**
 * Why the ring is not settled with `replicas` running, or [] if it is: each is a live member, every bucket is held by
 * one of them, and each holds at least one.
 */
export function ringProblems(view: RingView, replicas: readonly string[]): string[] {
  const out: string[] = [];
  const live = new Map<string, string>();
  for (const r of replicas) {
    const id = identityOf(view, r);
    if (id) live.set(id, r);
    else out.push(`${r} is no live member`);
  }
  const stray = view.holders.flatMap((h, b) => (live.has(h) ? [] : [`${b}: ${h || '""'}`]));
  if (stray.length > 0) out.push(`buckets not held by a live member: ${stray.join(', ')}`);
  for (const [id, r] of live) if (heldBy(view, id).length === 0) out.push(`${r} (${id}) holds no bucket`);
  return out;
}

/** Each replica's buckets, for the log: `chaos-a 11, chaos-b 10, …`. */
export function ringSummary(view: RingView, replicas: readonly string[]): string {
  return replicas.map((r) => `${r} ${heldBy(view, identityOf(view, r)).length}`).join(', ');
}

/** One sample of a Prometheus text exposition. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** The samples of a Prometheus text exposition (comments skipped). */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line.trim());
    if (!m || line.startsWith('#')) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] as string] = l[2] as string;
    out.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return out;
}

/** The sum of `name`'s samples whose labels include `labels`; undefined if it has none. */
export function metric(
  samples: readonly Sample[],
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number | undefined {
  const mine = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return mine.length === 0 ? undefined : mine.reduce((n, s) => n + s.value, 0);
}

/** A replica's /metrics now; undefined if it does not answer within a second. */
export async function scrape(url: string | undefined): Promise<Sample[] | undefined> {
  if (!url) return undefined;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
    return res.ok ? parseMetrics(await res.text()) : undefined;
  } catch {
    return undefined;
  }
}

/** Polls `probe` every `everyMs` until it gives a value: the value and the seconds it took, or undefined. */
export async function until<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 100,
): Promise<{ readonly value: T; readonly seconds: number } | undefined> {
  const t0 = performance.now();
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return { value, seconds: (performance.now() - t0) / 1000 };
    if (performance.now() - t0 > timeoutMs) return undefined;
    await sleep(everyMs);
  }
}

const live = (p: Pod) => !p.metadata.deletionTimestamp;

/**
 * Labels `filter`: every AppService carries a bucket label, and every live pod it controls the same one. Server: no
 * AppService carries one (none is ever written), and every live pod carries `u<bucket>` of its AppService's uid.
 */
export function shardLabelProblems(
  apps: readonly AppService[],
  pods: readonly Pod[],
  filter: ShardFilter = 'labels',
): Violation[] {
  const out: Violation[] = [];
  const byUid = new Map(apps.map((a) => [a.metadata.uid as string, a]));
  for (const a of apps) {
    const b = a.metadata.labels?.[SHARD_LABEL];
    const valid = filter === 'server' ? b === undefined : labelBucket(b) !== undefined;
    if (a.metadata.deletionTimestamp || valid) continue;
    out.push({ invariant: 'shard-label', detail: `AppService ${a.metadata.name}: ${SHARD_LABEL}=${b ?? '(none)'}` });
  }
  for (const p of pods.filter(live)) {
    const owner = byUid.get(p.metadata.ownerReferences?.find((r) => r.controller)?.uid ?? '');
    if (!owner) continue;
    const bucket = bucketOfObject('appservices', owner, filter);
    const want = bucket === undefined ? undefined : filter === 'server' ? `u${bucket}` : String(bucket);
    const got = p.metadata.labels?.[SHARD_LABEL];
    if (got !== want)
      out.push({
        invariant: 'shard-label',
        detail: `pod ${p.metadata.name}: ${SHARD_LABEL}=${got ?? '(none)'}, its AppService ${owner.metadata.name} is in ${want ?? '(none)'}`,
      });
  }
  return out;
}
