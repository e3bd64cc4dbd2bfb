/**
 * @module chaos/evidence
 * What a violation is reported with beyond its one line, so that its cause can be told from the report alone.
 */
import type { AuditEvent } from '@opkit/testenv';
import { secondsAfter, writeTimeline } from './audit.ts';
import type { Violation } from './monitor.ts';

/**
 * What a trial's overshoot is reported with, to tell its cause from the report alone: when the monitor saw each count,
 * the operator's pod writes and Lease takeovers from the audit log, and the replicas' leader changes, warnings and
 * errors — all in seconds after the fault began.
 */
export function overshootEvidence(
  t0: number,
  seen: readonly Violation[],
  events: readonly AuditEvent[],
  logs: ReadonlyMap<string, string>,
): string {
  const rel = (at: number) => secondsAfter(at, t0);
  const counts = seen.filter((v) => v.invariant === 'overshoot').map((v) => `${v.detail} at ${rel(v.at ?? t0)}`);
  const writes = writeTimeline(events, { from: t0, resources: new Set(['pods']) });
  const said: string[] = [];
  for (const [name, log] of logs)
    for (const line of log.split('\n')) {
      if (!/"level":"(warn|error)"|became leader|leader changed|lost|stopping/.test(line)) continue;
      const time = /"time":"([^"]+)"/.exec(line)?.[1];
      const msg = /"msg":"([^"]*)"/.exec(line)?.[1] ?? line.slice(0, 160);
      said.push(`${time ? rel(Date.parse(time)) : '?'} ${name}: ${msg}`);
    }
  return `evidence of the overshoot (seconds after the fault began): seen ${counts.join('; ')} | writes: ${writes.join('; ')} | the replicas said: ${said.slice(-30).join('; ')}`;
}
