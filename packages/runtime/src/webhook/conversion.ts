/**
 * @module webhook/conversion
 * The `ConversionReview` (apiextensions.k8s.io/v1 or v1beta1: the server answers in the request's version) handler for
 * kinds with several versions: `converter(...kinds)` converts each object of the review to `desiredAPIVersion` with
 * its kind's typed hub conversions (crd/versions).
 *
 * Guarantees: the response holds the converted objects in the request's order, or — if any object cannot be
 * converted (unknown kind or version, a conversion that throws) — none, and `result.status: Failure` with a message
 * naming the object; the apiserver then fails the read or write with that message instead of storing half a batch.
 */
import type { KubeObject } from '../client/resource.ts';

/** The `request` of a ConversionReview: objects to convert to one version. */
export interface ConversionRequest {
  /** Identifies this call; the response must carry it back. */
  readonly uid: string;
  /** The version to convert to, e.g. `app.example.com/v2`. */
  readonly desiredAPIVersion: string;
  /** The objects, each in some version of the kind. */
  readonly objects: readonly unknown[];
}

/** The `response` of a ConversionReview. */
export interface ConversionResponse {
  /** The request's `uid`. */
  uid: string;
  /** The converted objects in the request's order (empty on failure). */
  convertedObjects: unknown[];
  /** `Success`, or `Failure` with a message the apiserver fails the read or write with. */
  result: { status: 'Success' | 'Failure'; message?: string };
}

/** Answers one ConversionReview request; `converter` makes one for kinds defined with several versions. */
export type ConversionHandler = (
  request: ConversionRequest,
  ctx: { readonly signal: AbortSignal },
) => Promise<ConversionResponse>;

/** What `converter` needs of a kind: `defineKind` with several versions gives it. */
export interface Convertible {
  /** The kind's group and name, to match the objects of a review. */
  readonly definition: { readonly group: string; readonly kind: string };
  /** Converts `obj` to `apiVersion`; throws when it cannot. */
  convert(obj: KubeObject, apiVersion: string): KubeObject;
}

/** A conversion handler for the given kinds (one `/convert` endpoint may serve several). */
export function converter(...kinds: Convertible[]): ConversionHandler {
  const byKey = new Map(kinds.map((k) => [`${k.definition.kind}.${k.definition.group}`, k]));
  return async (request) => {
    const convertedObjects: unknown[] = [];
    for (const [i, obj] of request.objects.entries()) {
      const converted = convertOne(byKey, obj, request.desiredAPIVersion);
      if (typeof converted === 'string') {
        const name = (obj as KubeObject | null)?.metadata?.name;
        return {
          uid: request.uid,
          convertedObjects: [],
          result: { status: 'Failure', message: `objects[${i}]${name ? ` (${name})` : ''}: ${converted}` },
        };
      }
      convertedObjects.push(converted);
    }
    return { uid: request.uid, convertedObjects, result: { status: 'Success' } };
  };
}

/** `obj` converted to `apiVersion` by its kind, or why it cannot be. */
function convertOne(byKey: ReadonlyMap<string, Convertible>, obj: unknown, apiVersion: string): KubeObject | string {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return 'not an object';
  const o = obj as KubeObject;
  const group = typeof o.apiVersion === 'string' ? o.apiVersion.split('/')[0] : '';
  const kind = byKey.get(`${String(o.kind)}.${group}`);
  if (!kind) return `no conversion for ${String(o.kind)} in ${String(o.apiVersion)}`;
  try {
    return kind.convert(o, apiVersion);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
