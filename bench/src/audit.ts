/**
 * @module audit
 * The apiserver's own time per request, read from its audit log (received → response complete): which request of a
 * system is slow on the server, as opposed to in the client. Events without both timestamps are left out.
 */
import type { AuditEvent } from '@opkit/testenv';
import { quantile } from './harness.ts';

/** `verb resource[/subresource]` of an audit event, e.g. `patch appservices/status`. */
export function requestKey(e: AuditEvent): string {
  return `${e.verb} ${e.objectRef?.resource ?? ''}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
}

/** The apiserver's time per request in ms, ascending. */
export function serverMs(events: readonly AuditEvent[]): number[] {
  return events
    .map((e) => Date.parse(e.stageTimestamp ?? '') - Date.parse(e.requestReceivedTimestamp ?? ''))
    .filter((ms) => Number.isFinite(ms))
    .sort((a, b) => a - b);
}

/** p50 and p99 of the apiserver's time per request, by `requestKey`. */
export function serverMsByRequest(events: readonly AuditEvent[]): Record<string, { p50: number; p99: number }> {
  const by = new Map<string, AuditEvent[]>();
  for (const e of events) {
    const key = requestKey(e);
    const list = by.get(key);
    if (list) list.push(e);
    else by.set(key, [e]);
  }
  return Object.fromEntries(
    [...by].map(([k, es]) => {
      const ms = serverMs(es);
      return [k, { p50: quantile(ms, 0.5), p99: quantile(ms, 0.99) }];
    }),
  );
}
