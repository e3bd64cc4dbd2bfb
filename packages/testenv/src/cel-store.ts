/**
 * @module cel-store
 * What the apiserver's generic store checks on an update of a custom resource before validation runs, for the offline
 * validator's `update()`: the new object must carry a `metadata.resourceVersion` (the CRD strategy allows no
 * unconditional update), or the PUT is refused with the store's own 422, whatever else is wrong with it.
 *
 * Guarantees: the refusal is the apiserver's word for word (status, reason, details, cause and message; the
 * differential test holds it to a real apiserver), for a resourceVersion that is absent, empty or `"0"`. Caveat: with
 * no storage offline, a resourceVersion is never compared with the stored one (the apiserver answers a stale one
 * with 409 Conflict).
 */
import type { Admission, InvalidStatus } from './cel.ts';

type Json = Record<string, unknown>;

/**
 * `admission` (the validator's answer to updating to `object`), or, when `object` has no resourceVersion, the
 * apiserver's refusal of it, with the object as decoded (pruned, defaulted) and its resourceVersion as given.
 */
export function resourceVersionChecked<T extends object>(crd: Json, object: T, admission: Admission<T>): Admission<T> {
  const given = resourceVersionOf(object);
  if (given !== undefined && given !== '0') return admission;
  // the Go side lends the object the old one's resourceVersion: take it back
  const decoded: Json = { ...(admission.object as Json) };
  const metadata: Json = { ...(decoded.metadata as Json | undefined) };
  if (given === undefined) delete metadata.resourceVersion;
  else metadata.resourceVersion = given;
  const status = resourceVersionRequired(crd, decoded);
  return { allowed: false, object: { ...decoded, metadata } as T, status, causes: status.details.causes ?? [] };
}

/** `metadata.resourceVersion` of an object, when it is a non-empty string. */
function resourceVersionOf(object: object): string | undefined {
  const rv = ((object as Json).metadata as Json | undefined)?.resourceVersion;
  return typeof rv === 'string' && rv !== '' ? rv : undefined;
}

/**
 * The generic store's `Update` refusal of a PUT without a resourceVersion: an Invalid error qualified by the resource
 * (`probes.example.com`), not the kind.
 */
function resourceVersionRequired(crd: Json, object: Json): InvalidStatus {
  const spec = (crd.spec ?? {}) as { group?: string; names?: { plural?: string } };
  const group = spec.group ?? '';
  const resource = spec.names?.plural ?? '';
  const name = (object.metadata as Json | undefined)?.name;
  const cause = {
    reason: 'FieldValueInvalid',
    message: 'Invalid value: 0: must be specified for an update',
    field: 'metadata.resourceVersion',
  };
  const qualified = group === '' ? resource : `${resource}.${group}`;
  return {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    message: `${qualified} ${JSON.stringify(typeof name === 'string' ? name : '')} is invalid: ${cause.field}: ${cause.message}`,
    reason: 'Invalid',
    details: {
      ...(typeof name === 'string' && name !== '' ? { name } : {}),
      ...(group !== '' ? { group } : {}),
      kind: resource,
      causes: [cause],
    },
    code: 422,
  };
}
