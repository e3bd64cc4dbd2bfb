/**
 * @module chaos/convergence
 * Whether an operator reached a fixed point, judged from the apiserver's audit log and the objects it stores:
 * - **No write while settled.** Once the desired state stopped changing and a settle period passed, the operator
 *   writes nothing more: a write in the quiet window (a timestamp put in the status on every reconcile, a child
 *   updated back and forth between two values) means it never settles. Lease renewals and Events are not writes of
 *   state and never count.
 * - **Status caught up.** Where a status has `observedGeneration`, it equals `metadata.generation`.
 *
 * Guarantees: a verdict names the object written (resource, namespace/name), how many writes the window held and the
 * first of them, so the report points at the field that keeps changing; only successful writes by `user` count.
 */
import { type AuditEvent, WRITE_VERBS } from '../audit-log.ts';
import { describeObject, type ObjectRecord } from './lineage.ts';

/** One broken convergence invariant. */
export interface ConvergenceViolation {
  readonly invariant: 'settles' | 'status-caught-up';
  /** `resource namespace/name`, or `Kind namespace/name`. */
  readonly object: string;
  readonly message: string;
}

/** Resources whose writes are bookkeeping, not state: a leader's Lease renewals and the Events it records. */
export const BOOKKEEPING_RESOURCES: ReadonlySet<string> = new Set(['leases', 'events']);

/** What `writesWhileSettled` judges. */
export interface QuietWindow {
  /** The operator's user name in the audit log (`system:serviceaccount:<namespace>:<name>`). */
  readonly user: string;
  /** The window, in ms since the epoch: from the end of the settle period to the end of the observation. */
  readonly from: number;
  readonly to: number;
  /** Resources that never count (default `BOOKKEEPING_RESOURCES`). */
  readonly ignore?: ReadonlySet<string>;
}

const at = (e: AuditEvent) => Date.parse(e.requestReceivedTimestamp ?? '');

/** The operator's writes in the quiet window, grouped by object: each object written while nothing changed. */
export function writesWhileSettled(events: readonly AuditEvent[], window: QuietWindow): ConvergenceViolation[] {
  const ignore = window.ignore ?? BOOKKEEPING_RESOURCES;
  const byObject = new Map<string, AuditEvent[]>();
  for (const e of events) {
    const r = e.objectRef;
    if (e.user.username !== window.user || !WRITE_VERBS.has(e.verb) || ignore.has(r?.resource ?? '')) continue;
    if ((e.responseStatus?.code ?? 0) >= 300) continue;
    const t = at(e);
    if (!(t >= window.from && t <= window.to)) continue;
    const key = `${r?.resource ?? '?'}${r?.subresource ? `/${r.subresource}` : ''} ${r?.namespace ? `${r.namespace}/` : ''}${r?.name ?? '?'}`;
    const list = byObject.get(key);
    if (list === undefined) byObject.set(key, [e]);
    else list.push(e);
  }
  const seconds = ((window.to - window.from) / 1000).toFixed(1);
  return [...byObject].map(([object, writes]) => {
    const first = writes[0] as AuditEvent;
    return {
      invariant: 'settles',
      object,
      message:
        `${object}: ${writes.length} ${writes.length === 1 ? 'write' : 'writes'} (${[...new Set(writes.map((w) => w.verb))].join(', ')}) ` +
        `in the ${seconds} s after the desired state stopped changing, the first at ${first.requestReceivedTimestamp}: ` +
        'a settled operator writes nothing (does a reconcile write a value that changes each time, such as a timestamp?)',
    };
  });
}

/** The part of an object `statusBehind` reads. */
export interface GenerationRecord extends ObjectRecord {
  readonly metadata?: ObjectRecord['metadata'] & { readonly generation?: number };
  readonly status?: { readonly observedGeneration?: number };
}

/** Objects whose status has `observedGeneration` and it differs from `metadata.generation`. */
export function statusBehind(objects: Iterable<GenerationRecord>): ConvergenceViolation[] {
  const out: ConvergenceViolation[] = [];
  for (const o of objects) {
    const observed = o.status?.observedGeneration;
    const generation = o.metadata?.generation;
    if (observed === undefined || generation === undefined || observed === generation) continue;
    out.push({
      invariant: 'status-caught-up',
      object: describeObject(o),
      message: `${describeObject(o)}: status.observedGeneration is ${observed}, metadata.generation ${generation}: the status does not describe the spec`,
    });
  }
  return out;
}
