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

export interface ConversionRequest {
  readonly uid: string;
  readonly desiredAPIVersion: string;
  readonly objects: readonly unknown[];
}

export interface ConversionResponse {
  uid: string;
  convertedObjects: unknown[];
  result: { status: 'Success' | 'Failure'; message?: string };
}

export type ConversionHandler = (
  request: ConversionRequest,
  ctx: { readonly signal: AbortSignal },
) => Promise<ConversionResponse>;

/** What `converter` needs of a kind: `defineKind` with several versions gives it. */
export interface Convertible {
  readonly definition: { readonly group: string; readonly kind: string };
  convert(obj: KubeObject, apiVersion: string): KubeObject;
}

/** A conversion handler for the given kinds (one `/convert` endpoint may serve several). */
export function converter(...kinds: Convertible[]): ConversionHandler {
  const byKey = new Map(kinds.map((k) => [`${k.definition.kind}.${k.definition.group}`, k]));
  return async (request) => {
    const convertedObjects: unknown[] = [];
    for (const [i, obj] of request.objects.entries()) {
      try {
        if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) throw new Error('not an object');
        const o = obj as KubeObject;
        const group = typeof o.apiVersion === 'string' ? o.apiVersion.split('/')[0] : '';
        const kind = byKey.get(`${String(o.kind)}.${group}`);
        if (!kind) throw new Error(`no conversion for ${String(o.kind)} in ${String(o.apiVersion)}`);
        convertedObjects.push(kind.convert(o, request.desiredAPIVersion));
      } catch (err) {
        const name = (obj as KubeObject | null)?.metadata?.name;
        return {
          uid: request.uid,
          convertedObjects: [],
          result: {
            status: 'Failure',
            message: `objects[${i}]${name ? ` (${name})` : ''}: ${(err as Error).message}`,
          },
        };
      }
    }
    return { uid: request.uid, convertedObjects, result: { status: 'Success' } };
  };
}
