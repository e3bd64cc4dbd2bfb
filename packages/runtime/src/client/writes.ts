/**
 * @module client/writes
 * What the client's writes send besides the object: the Content-Type of each patch format, the query of a write, the
 * body of a delete, and the checks every whole-object write passes before any request.
 *
 * A write of a built-in kind asks for its answer in protobuf (with `protobuf` on), once its decoders are loaded, and
 * names where its object is read back in JSON should that answer not decode (`readBack`); any other write asks for JSON.
 *
 * Guarantees: a whole-object write through a metadata-only type is refused with a `UsageError` (`InvalidArgument`)
 * before any request; an object sent without `apiVersion` and `kind` gets its kind's, on a copy (the caller's object
 * is never changed).
 */
import { UsageError } from '../errors.ts';
import { hasDecoder, load } from './protobuf/codec.ts';
import { acceptOf, type Kind, type KubeObject, type ObjectRef, objectPath, refOf } from './resource.ts';
import type { TransportRequest } from './transport.ts';
import type { DeleteOptions, PatchOptions, PatchType, WriteOptions } from './types.ts';

/** The Content-Type of each patch format. */
export const CONTENT_TYPES: Readonly<Record<PatchType, string>> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
};

/** Refuses a write that sends a whole object (or its status) through a metadata-only type: it has neither. */
export function wholeObject(r: Kind<KubeObject, unknown>, what: string): void {
  if (r.metadataOnly) {
    throw new UsageError(
      'InvalidArgument',
      `${r.kind} (metadata only): ${what} needs the whole object; use the kind itself, or patch the metadata`,
    );
  }
}

/** `obj`, or a copy of it with the kind's `apiVersion` and `kind` when it lacks them. */
export function withType<T extends KubeObject>(r: Kind<KubeObject, unknown>, obj: T): T {
  return obj.apiVersion && obj.kind ? obj : { ...obj, apiVersion: r.apiVersion, kind: r.kind };
}

/**
 * How a write of the object `ref` (`undefined`: named only by its answer, a create with `generateName`, or a dry run,
 * whose answer is stored nowhere) asks for its answer: see the module comment. A read-back that fails is the write's
 * error, though the write was applied.
 */
export async function answerOf(
  r: Kind,
  ref: ObjectRef | undefined,
  protobuf: boolean,
): Promise<Pick<TransportRequest, 'accept' | 'readBack'>> {
  if (ref === undefined || !protobuf || r.metadataOnly || !hasDecoder(r.apiVersion, r.kind))
    return { accept: acceptOf(r) };
  await load(r.apiVersion, r.kind);
  return { accept: acceptOf(r, false, true), readBack: objectPath(r, ref) };
}

/** The object `obj` names, in `defaultNamespace` when its kind is namespaced and it names none. */
export function writtenRef(r: Kind<KubeObject, unknown>, obj: KubeObject, defaultNamespace: string): ObjectRef {
  const ref = refOf(obj);
  if (!ref.name) throw new UsageError('InvalidArgument', `the ${r.kind} has no metadata.name`);
  if (r.namespaced && !ref.namespace) return { namespace: defaultNamespace, name: ref.name };
  return ref;
}

/** The query of a write: its field manager and field validation, `dryRun=All` for a dry run, `force` for an apply. */
export function writeQuery(options: WriteOptions & PatchOptions): Record<string, string | boolean | undefined> {
  const { fieldManager, fieldValidation, dryRun, force, type } = options;
  // `force` only on a forced apply: the apiserver refuses it (even false) on any other write
  const forced = type === 'apply' && force ? true : undefined;
  return { fieldManager, fieldValidation, dryRun: dryRun ? 'All' : undefined, force: forced };
}

/** The body of a DELETE with `options` (a `DeleteOptions`), or undefined when they ask for nothing. */
export function deleteBody(options: DeleteOptions): Record<string, unknown> | undefined {
  const { propagationPolicy, gracePeriodSeconds, preconditions } = options;
  if (!propagationPolicy && gracePeriodSeconds === undefined && !preconditions) return undefined;
  return {
    apiVersion: 'v1',
    kind: 'DeleteOptions',
    ...(propagationPolicy ? { propagationPolicy } : {}),
    ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}),
    ...(preconditions ? { preconditions } : {}),
  };
}
