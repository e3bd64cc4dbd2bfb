/**
 * @module helpers/conditions
 * Status conditions (metav1.Condition) with the semantics of the Kubernetes API conventions: one condition per
 * `type`, `lastTransitionTime` moves only when `status` changes, and `reason` is a CamelCase identifier.
 * Guarantees: nothing here mutates its input (arrays or condition objects); `setCondition` and `removeCondition`
 * return fresh arrays of fresh condition objects, keep the order of existing conditions and append a new type;
 * `changed` is true exactly when the returned conditions differ from the input, so callers can skip a status write
 * when nothing changed.
 * Invalid input (empty `type`, a `reason` that is not CamelCase, an unknown `status`, a negative or fractional
 * `observedGeneration`) is a `UsageError` (`InvalidArgument`) naming the field and the value.
 * A kind's status declares its conditions with `ConditionsSchema` (`@opkit/runtime/crd`): its static type is exactly
 * `Condition`, so `setCondition(obj.status?.conditions, …)` takes and returns them without a cast.
 */
import { UsageError } from '../errors.ts';

/** Whether a condition holds: `True`, `False`, or `Unknown` (not yet known). */
export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** A status condition as stored in the API (metav1.Condition). */
export interface Condition {
  /** What the condition is about, in CamelCase (`Ready`, `Available`); one condition per type. */
  type: string;
  /** Whether it holds. */
  status: ConditionStatus;
  /** CamelCase, e.g. `MinimumReplicasAvailable`; required by metav1.Condition validation. */
  reason: string;
  /** What it means in this case, for people ('' when there is nothing to add). */
  message: string;
  /** RFC 3339 with seconds precision, e.g. `2024-05-01T12:00:00Z`. */
  lastTransitionTime: string;
  /** The `metadata.generation` the condition was computed from. */
  observedGeneration?: number;
}

/** What to set: `lastTransitionTime` is managed by `setCondition`; `message` defaults to ''. */
export interface ConditionInput {
  /** What the condition is about, in CamelCase (`Ready`, `Available`). */
  type: string;
  /** Whether it holds. */
  status: ConditionStatus;
  /** Why, as a CamelCase identifier (`MinimumReplicasAvailable`). */
  reason: string;
  /** What it means in this case, for people (default ''). */
  message?: string;
  /** The `metadata.generation` the condition was computed from. */
  observedGeneration?: number;
}

const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
const STATUSES: ReadonlySet<string> = new Set<ConditionStatus>(['True', 'False', 'Unknown']);

/** `date` as RFC 3339 with seconds precision (the API stores metav1.Time in seconds). */
function rfc3339(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function validate(input: ConditionInput): void {
  if (typeof input.type !== 'string' || input.type.length === 0) {
    throw new UsageError(
      'InvalidArgument',
      `condition type must be a non-empty string, got ${JSON.stringify(input.type)}`,
    );
  }
  if (!STATUSES.has(input.status)) {
    throw new UsageError(
      'InvalidArgument',
      `condition ${input.type}: status must be 'True', 'False' or 'Unknown', got ${JSON.stringify(input.status)}`,
    );
  }
  if (typeof input.reason !== 'string' || !REASON.test(input.reason)) {
    throw new UsageError(
      'InvalidArgument',
      `condition ${input.type}: reason must be CamelCase (matching ${REASON.source}), got ${JSON.stringify(input.reason)}`,
    );
  }
  const gen = input.observedGeneration;
  if (gen !== undefined && !(Number.isSafeInteger(gen) && gen >= 0)) {
    throw new UsageError(
      'InvalidArgument',
      `condition ${input.type}: observedGeneration must be a non-negative integer, got ${JSON.stringify(gen)}`,
    );
  }
}

function copy(c: Condition): Condition {
  return { ...c };
}

function same(a: Condition, b: Condition): boolean {
  return (
    a.type === b.type &&
    a.status === b.status &&
    a.reason === b.reason &&
    a.message === b.message &&
    a.lastTransitionTime === b.lastTransitionTime &&
    a.observedGeneration === b.observedGeneration
  );
}

/**
 * Sets the condition of `input.type`. Returns a NEW array (the input is never mutated) and whether anything changed.
 * `lastTransitionTime` becomes `now` when the condition is new or its status changes; updating only reason, message
 * or observedGeneration keeps the old `lastTransitionTime`. Existing conditions keep their order; a new type is
 * appended. The result reflects the input exactly: a `message` left out becomes '', an `observedGeneration` left out
 * is removed. If `conditions` holds the type more than once, the first entry is updated and the others are kept.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  input: ConditionInput,
  now: Date = new Date(),
): { conditions: Condition[]; changed: boolean } {
  validate(input);
  const list = (conditions ?? []).map(copy);
  const index = list.findIndex((c) => c.type === input.type);
  const existing = index < 0 ? undefined : list[index];
  const next: Condition = {
    type: input.type,
    status: input.status,
    reason: input.reason,
    message: input.message ?? '',
    lastTransitionTime:
      existing !== undefined && existing.status === input.status ? existing.lastTransitionTime : rfc3339(now),
    ...(input.observedGeneration !== undefined ? { observedGeneration: input.observedGeneration } : {}),
  };
  if (existing === undefined) {
    list.push(next);
    return { conditions: list, changed: true };
  }
  if (same(existing, next)) return { conditions: list, changed: false };
  list[index] = next;
  return { conditions: list, changed: true };
}

/** The condition of `type`, or undefined. */
export function getCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** True when the condition of `type` exists and its status is 'True'. */
export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return getCondition(conditions, type)?.status === 'True';
}

/** True when the condition of `type` exists and its status is 'False'. */
export function isConditionFalse(conditions: readonly Condition[] | undefined, type: string): boolean {
  return getCondition(conditions, type)?.status === 'False';
}

/** True when the condition of `type` is absent or its status is 'Unknown'. */
export function isConditionUnknown(conditions: readonly Condition[] | undefined, type: string): boolean {
  const c = getCondition(conditions, type);
  return c === undefined || c.status === 'Unknown';
}

/** Removes every condition of `type`. Returns a NEW array (the input is never mutated) and whether one was removed. */
export function removeCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): { conditions: Condition[]; changed: boolean } {
  const before = conditions ?? [];
  const after = before.filter((c) => c.type !== type).map(copy);
  return { conditions: after, changed: after.length !== before.length };
}
