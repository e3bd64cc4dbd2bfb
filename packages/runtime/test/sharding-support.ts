/**
 * @module test/sharding-support
 * What the sharding integration tests share: short Lease timings, a logger that prints a replica's lines when
 * SHARD_DEBUG is set, the record of reconciles by replica that proves no object was reconciled by two at once, and
 * the Widget reconcile both tests run (a Widget owns one ConfigMap of its color).
 */
import { ConfigMaps } from '../src/client/builtins.ts';
import type { ObjectContext } from '../src/index.ts';
import { silentLogger } from '../src/logger.ts';
import type { Widget } from './support.ts';

/** Member and fence Lease timings short enough for a test. */
export const TIMINGS = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };

/** Replica `name`'s logger: silent, or (SHARD_DEBUG set) its lines that `show` passes, on stdout. */
export function replicaLog(name: string, show: (level: string, msg: string) => boolean): typeof silentLogger {
  if (!process.env.SHARD_DEBUG) return silentLogger;
  const out = (level: string) => (fields: object, msg: string) => {
    if (show(level, msg)) console.log(Date.now() % 100000, name, level, msg, JSON.stringify(fields));
  };
  const l = { debug: out('debug'), info: out('info'), warn: out('warn'), error: out('error'), child: () => l };
  return l as unknown as typeof silentLogger;
}

/** One reconcile of an object (`key`) by a replica, from start to end (ms; `end` set when it returns). */
export interface Span {
  readonly key: string;
  readonly replica: string;
  readonly start: number;
  end: number;
}

/** Pairs of reconciles of one object by two replicas that overlapped in time. */
export function overlaps(spans: readonly Span[]): string[] {
  const out: string[] = [];
  for (const a of spans)
    for (const b of spans)
      if (a !== b && a.key === b.key && a.replica < b.replica && a.start < b.end && b.start < a.end)
        out.push(`${a.key}: ${a.replica} [${a.start}, ${a.end}] and ${b.replica} [${b.start}, ${b.end}]`);
  return out;
}

/**
 * Runs a reconcile of `w` by `replica` as a `Span` in `spans`, then gives `w` its one ConfigMap child of its color:
 * made (with `generateName` when `generate`, so a child the reconcile cannot see would be made again), or updated.
 */
export async function reconcileWidget(
  spans: Span[],
  replica: string,
  w: Widget,
  ctx: ObjectContext<Widget>,
  o: { readonly generate: boolean; readonly before: () => Promise<void> },
): Promise<void> {
  const span: Span = { key: `${w.metadata.namespace}/${w.metadata.name}`, replica, start: Date.now(), end: Infinity };
  spans.push(span);
  try {
    await o.before();
    const data = { color: w.spec?.color ?? '' };
    const [child] = await ctx.owned(ConfigMaps);
    const name = w.metadata.name ?? '';
    const metadata = o.generate ? { generateName: `${name}-` } : { name: `${name}-child` };
    if (!child) await ctx.create(ConfigMaps, { metadata, data });
    else if (child.data?.color !== data.color)
      await ctx.apply(ConfigMaps, { metadata: { name: child.metadata.name ?? '' }, data });
  } finally {
    span.end = Date.now();
  }
}
