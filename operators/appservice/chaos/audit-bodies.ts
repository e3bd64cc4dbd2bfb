/**
 * @module chaos/audit-bodies
 * What the sharded chaos has the apiserver record of the operator's writes, and what it keeps of that: the audit
 * policy (the request and response bodies of the operator's writes to leases, pods, AppServices and Events; everything
 * else at level Metadata, as testenv's default policy), the audit event with its bodies, and a slimmed copy holding
 * only what chaos/fences reads (kind, name, namespace, UID and labels; a Lease's holder; an Event's subject), so a
 * long run keeps little of the bodies in memory.
 */
import { type AuditEvent, WRITE_VERBS } from '@opkit/testenv';
import { replicaOf } from './audit.ts';

/** The audit policy of the sharded chaos for the operator's identity `user` (see the module comment). */
export const shardedAuditPolicy = (user: string): string => `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: RequestResponse
    users: ["${user}"]
    verbs: ["create", "update", "patch", "delete"]
    resources:
      - group: coordination.k8s.io
        resources: ["leases"]
      - group: ""
        resources: ["pods", "pods/status", "events"]
      - group: events.k8s.io
        resources: ["events"]
      - group: app.example.com
        resources: ["appservices", "appservices/status"]
  - level: Metadata
`;

/** An audit event as the sharded chaos policy records the operator's writes: with request and response bodies. */
export interface BodyEvent extends AuditEvent {
  readonly auditID?: string;
  readonly requestObject?: unknown;
  readonly responseObject?: unknown;
}

/** What chaos/fences reads of a body. */
export interface Body {
  readonly kind?: string;
  readonly metadata?: {
    readonly uid?: string;
    readonly name?: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
  };
  readonly spec?: { readonly holderIdentity?: string | null };
  readonly involvedObject?: { readonly kind?: string; readonly uid?: string; readonly name?: string };
  readonly regarding?: { readonly kind?: string; readonly uid?: string; readonly name?: string };
}

export const body = (o: unknown): Body | undefined => (typeof o === 'object' && o !== null ? (o as Body) : undefined);

/** A successful write by a replica of the operator (its user agent names the replica). */
export const isOperatorWrite = (e: AuditEvent): boolean => {
  const code = e.responseStatus?.code ?? 0;
  return code >= 200 && code < 300 && WRITE_VERBS.has(e.verb) && replicaOf(e) !== undefined;
};

const WRITTEN = new Set(['leases', 'pods', 'appservices', 'events']);

/** Whether chaos/fences needs the event: an operator's successful write to a lease, pod, AppService or Event. */
export const fenceRelevant = (e: AuditEvent): boolean => isOperatorWrite(e) && WRITTEN.has(e.objectRef?.resource ?? '');

function slim(o: unknown): Body | undefined {
  const b = body(o);
  if (!b) return undefined;
  const m = b.metadata;
  return {
    ...(b.kind !== undefined ? { kind: b.kind } : {}),
    ...(m
      ? {
          metadata: {
            ...(m.uid !== undefined ? { uid: m.uid } : {}),
            ...(m.name !== undefined ? { name: m.name } : {}),
            ...(m.namespace !== undefined ? { namespace: m.namespace } : {}),
            ...(m.labels !== undefined ? { labels: m.labels } : {}),
          },
        }
      : {}),
    ...(b.spec && 'holderIdentity' in b.spec ? { spec: { holderIdentity: b.spec.holderIdentity ?? null } } : {}),
    ...(b.involvedObject ? { involvedObject: b.involvedObject } : {}),
    ...(b.regarding ? { regarding: b.regarding } : {}),
  };
}

/** The event with only what chaos/fences reads of its bodies. */
export function slimEvent(e: BodyEvent): BodyEvent {
  const { requestObject, responseObject, ...rest } = e;
  const req = slim(requestObject);
  const res = slim(responseObject);
  return { ...rest, ...(req ? { requestObject: req } : {}), ...(res ? { responseObject: res } : {}) };
}
