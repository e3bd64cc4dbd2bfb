/**
 * @module chaos/audit
 * What the apiserver's audit log says about the operator: its requests by replica (the user agent names the replica),
 * whether two replicas ever acted at once (split brain), Forbidden answers, and which of its granted permissions it
 * used.
 */
import { type AuditEvent, WRITE_VERBS } from '@opkit/testenv';

/** Whether `at` (ms since the epoch) falls in one of the windows, e.g. while the apiserver restarted. */
export const inWindows = (at: number, windows: readonly (readonly [number, number])[]): boolean =>
  windows.some(([from, to]) => at >= from && at <= to);

export const replicaOf = (e: AuditEvent): string | undefined => /; ([^)]+)\)/.exec(e.userAgent ?? '')?.[1];

/** Who holds the Lease by the audit log so far, carried from one slice of the log to the next. */
export interface LeaseView {
  holder: string | undefined;
  /** When `holder` took it (ms since the epoch). */
  since: number;
  /** The replica `holder` took it from, if another held it before. */
  from?: string | undefined;
}

/**
 * Split brain: a write (not to the Lease) by a replica received after another replica had taken the Lease, and before
 * this replica took it back. The Lease holder is the replica whose Lease write last succeeded, in the log's order;
 * `view` is updated, so consecutive slices are judged as one log. A write by the replica the Lease was taken from —
 * a leader that went on acting after it lost the Lease, e.g. once continued after a pause — says so.
 */
export function splitBrain(events: readonly AuditEvent[], view: LeaseView = { holder: undefined, since: 0 }): string[] {
  let { holder, since, from } = view;
  const out: string[] = [];
  for (const e of events) {
    const who = replicaOf(e);
    const ok = (e.responseStatus?.code ?? 0) < 300;
    if (!who || !ok || !WRITE_VERBS.has(e.verb)) continue;
    if (e.objectRef?.resource === 'leases') {
      if (holder !== who) {
        from = holder;
        holder = who;
        since = Date.parse(e.stageTimestamp ?? '');
      }
      continue;
    }
    const at = Date.parse(e.requestReceivedTimestamp ?? '');
    if (holder === undefined || holder === who || !(at > since)) continue;
    const write = `${who} ${e.verb} ${e.objectRef?.resource}/${e.objectRef?.name ?? ''} at ${e.requestReceivedTimestamp}`;
    const taken = new Date(since).toISOString();
    out.push(
      who === from
        ? `${write}, ${((at - since) / 1000).toFixed(1)} s after ${holder} took the Lease from it (at ${taken}): a former leader still writing`
        : `${write} while ${holder} held the Lease (since ${taken})`,
    );
  }
  view.holder = holder;
  view.since = since;
  view.from = from;
  return out;
}

/** `at` as seconds after `from` (both ms since the epoch), signed: `+1.500 s`, `-0.250 s`. */
export function secondsAfter(at: number, from: number): string {
  const s = (at - from) / 1000;
  return `${s >= 0 ? '+' : ''}${s.toFixed(3)} s`;
}

/**
 * The operator's writes of `resources` and its Lease takeovers in `events`, one line each (`+S.SSS s replica verb
 * resource/name code`, seconds after `from`, ms since the epoch), at most `limit` of them, the last ones kept: the
 * evidence a violation such as an overshoot is reported with.
 */
export function writeTimeline(
  events: readonly AuditEvent[],
  o: { readonly from: number; readonly resources: ReadonlySet<string>; readonly limit?: number },
): string[] {
  const lines: string[] = [];
  let holder: string | undefined;
  for (const e of events) {
    const who = replicaOf(e);
    const resource = e.objectRef?.resource ?? '';
    if (!who || !WRITE_VERBS.has(e.verb)) continue;
    const code = e.responseStatus?.code ?? 0;
    if (resource === 'leases') {
      if (code >= 300 || holder === who) continue;
      holder = who;
    } else if (!o.resources.has(resource)) continue;
    const what = resource === 'leases' ? 'takes the Lease' : `${e.verb} ${resource}/${e.objectRef?.name ?? ''} ${code}`;
    lines.push(`${secondsAfter(Date.parse(e.requestReceivedTimestamp ?? ''), o.from)} ${who} ${what}`);
  }
  const limit = o.limit ?? 40;
  return lines.length > limit ? [`(${lines.length - limit} earlier)`, ...lines.slice(-limit)] : lines;
}

export function forbidden(events: readonly AuditEvent[]): AuditEvent[] {
  return events.filter((e) => e.responseStatus?.code === 403);
}

export interface Rule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
}

/**
 * Every (group, resource, verb) the rules grant that no successful request used. A streaming list (a watch with
 * `sendInitialEvents=true`) counts as a use of `list` too: it is the list, and `list` stays granted for the paginated
 * fallback where a server refuses streaming lists. Likewise an update of a `status` subresource counts as a use of
 * `patch` on it: the status writer merge-patches only after a Conflict (helpers/status.ts), which a run may not meet.
 */
export function unusedPermissions(events: readonly AuditEvent[], rules: readonly Rule[]): string[] {
  const used = new Set(
    events
      .filter(
        (e) => (e.responseStatus?.code ?? 0) < 400 || e.responseStatus?.code === 404 || e.responseStatus?.code === 409,
      )
      .flatMap((e) => {
        const r = e.objectRef;
        const resource = r?.subresource ? `${r.resource}/${r.subresource}` : r?.resource;
        const key = (verb: string) => `${r?.apiGroup ?? ''}|${resource}|${verb}`;
        const streamingList =
          e.verb === 'watch' && /[?&]sendInitialEvents=true(&|$)/.test((e as { requestURI?: string }).requestURI ?? '');
        if (streamingList) return [key('watch'), key('list')];
        return e.verb === 'update' && r?.subresource === 'status' ? [key('update'), key('patch')] : [key(e.verb)];
      }),
  );
  const out: string[] = [];
  for (const rule of rules)
    for (const group of rule.apiGroups)
      for (const resource of rule.resources)
        for (const verb of rule.verbs)
          if (!used.has(`${group}|${resource}|${verb}`)) out.push(`${verb} ${resource}${group ? `.${group}` : ''}`);
  return out;
}
