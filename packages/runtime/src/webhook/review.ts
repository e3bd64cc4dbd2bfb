/**
 * @module webhook/review
 * Reading one review off the wire: the body of an `AdmissionReview` (admission.k8s.io/v1 or v1beta1) or a
 * `ConversionReview` (apiextensions.k8s.io/v1 or v1beta1) within the review's time budget, and the replies the server
 * sends. Internal to the webhook server.
 *
 * Guarantees:
 * - A read never throws for what the client sent: it ends as the review, or as a refusal that says how to answer —
 *   `malformed` with 400 (a wrong content type, an empty, unparsable or misshapen body) or 413 (larger than the
 *   limit, by its `content-length` or by what arrived), each with a one-line message; or `unread` when the body had not
 *   fully arrived by the deadline. A refused body is drained unread.
 * - An admission refusal carries what could be read before it: the review's apiVersion (else v1) and its uid (else
 *   `""`), so the answer is in the request's version with its uid.
 * - `parseTimeout` reads the apiserver's `?timeout=` (`10s`, `500ms`, `1m`) as milliseconds: default 10 s, at least
 *   1 ms, at most 30 s.
 */
import type { IncomingMessage } from 'node:http';
import type { AdmissionRequest, AdmissionResponse } from './admission.ts';
import type { ConversionRequest } from './conversion.ts';

/** The apiserver's timeout when its request names none. */
const DEFAULT_TIMEOUT_MS = 10_000;
/** The apiserver's longest webhook timeout. */
export const MAX_TIMEOUT_MS = 30_000;
const OPERATIONS: ReadonlySet<unknown> = new Set(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']);
/** The admission review versions served, the default (for an answer to an unreadable review) first. */
export const ADMISSION_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const;
const CONVERSION_VERSIONS = ['apiextensions.k8s.io/v1', 'apiextensions.k8s.io/v1beta1'] as const;

/** What the server sends back for one request. */
export interface Reply {
  /** The HTTP status. */
  readonly status: number;
  /** The body, as sent. */
  readonly body: string;
  /** Its content type. */
  readonly contentType: string;
  /** Close the connection after the reply (a client may still be sending a body the server will not read). */
  readonly close?: boolean;
  /** Drain the rest of the body before the reply (one refused as too large, which the client is still sending). */
  readonly drain?: boolean;
}

/** Why a request cannot be read as a review: answered with `status`, or (`unread`) with a 504 at once. */
export type Refusal =
  | { readonly kind: 'malformed'; readonly status: 400 | 413; readonly message: string }
  | { readonly kind: 'unread' };

/** An admission review read: its apiVersion and request, or a refusal with what could be read before it. */
export type AdmissionRead =
  | { readonly kind: 'read'; readonly apiVersion: string; readonly request: AdmissionRequest }
  | (Refusal & { readonly apiVersion: string; readonly uid: string });

/** A conversion review read: its apiVersion and request, or a refusal. */
export type ConversionRead =
  | { readonly kind: 'read'; readonly apiVersion: string; readonly request: ConversionRequest }
  | Refusal;

type Parsed<T> = { readonly kind: 'read'; readonly value: T } | Refusal;

function malformed(status: 400 | 413, message: string): Refusal {
  return { kind: 'malformed', status, message };
}

/** A plain-text reply. */
export function text(status: number, message: string): Reply {
  return { status, body: `${message}\n`, contentType: 'text/plain; charset=utf-8' };
}

/** A JSON reply. */
export function json(status: number, value: unknown): Reply {
  return { status, body: JSON.stringify(value), contentType: 'application/json' };
}

/** An AdmissionReview answer (always HTTP 200: a denial is in the response). */
export function admissionReview(apiVersion: string, response: AdmissionResponse): Reply {
  return json(200, { apiVersion, kind: 'AdmissionReview', response });
}

/** Reads an AdmissionReview, its body at most `limit` bytes, arriving by `deadline` (`performance.now()` time). */
export async function readAdmission(req: IncomingMessage, limit: number, deadline: number): Promise<AdmissionRead> {
  let apiVersion: string = ADMISSION_VERSIONS[0];
  const review = await readJson(req, limit, deadline);
  if (review.kind !== 'read') return { ...review, apiVersion, uid: '' };
  const version = reviewVersion(review.value, 'AdmissionReview', ADMISSION_VERSIONS);
  if (version.kind !== 'read') return { ...version, apiVersion, uid: '' };
  apiVersion = version.value;
  const r = reviewRequest(review.value, 'AdmissionReview');
  if (r.kind !== 'read') return { ...r, apiVersion, uid: '' };
  const uid = r.value.uid;
  if (!OPERATIONS.has(r.value.operation)) {
    const message = `AdmissionReview.request.operation ${show(r.value.operation)} is not one of ${[...OPERATIONS].join(', ')}`;
    return { ...malformed(400, message), apiVersion, uid };
  }
  return { kind: 'read', apiVersion, request: r.value as unknown as AdmissionRequest };
}

/** Reads a ConversionReview, its body at most `limit` bytes, arriving by `deadline` (`performance.now()` time). */
export async function readConversion(req: IncomingMessage, limit: number, deadline: number): Promise<ConversionRead> {
  const review = await readJson(req, limit, deadline);
  if (review.kind !== 'read') return review;
  const version = reviewVersion(review.value, 'ConversionReview', CONVERSION_VERSIONS);
  if (version.kind !== 'read') return version;
  const r = reviewRequest(review.value, 'ConversionReview');
  if (r.kind !== 'read') return r;
  if (typeof r.value.desiredAPIVersion !== 'string' || !Array.isArray(r.value.objects)) {
    return malformed(400, 'ConversionReview.request needs desiredAPIVersion and objects');
  }
  return { kind: 'read', apiVersion: version.value, request: r.value as unknown as ConversionRequest };
}

/** The body as JSON; refused for a wrong content type, an oversized, empty or unparsable body, or one still arriving. */
async function readJson(req: IncomingMessage, limit: number, deadline: number): Promise<Parsed<unknown>> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    req.resume();
    return malformed(400, `content-type ${JSON.stringify(type)} not supported: send application/json`);
  }
  const body = await readBody(req, limit, deadline);
  if (body.kind !== 'read') return body;
  if (body.value.trim() === '') return malformed(400, 'the request body is empty');
  try {
    return { kind: 'read', value: JSON.parse(body.value) };
  } catch (err) {
    return malformed(400, `the body is not JSON: ${errorMessage(err)}`);
  }
}

/** The review's apiVersion, one of `versions`. */
function reviewVersion(review: unknown, kind: string, versions: readonly string[]): Parsed<string> {
  const article = /^[AEIOU]/.test(kind) ? 'an' : 'a';
  if (!isObject(review)) return malformed(400, `the body must be ${article} ${kind} object`);
  if (review.kind !== kind || typeof review.apiVersion !== 'string' || !versions.includes(review.apiVersion)) {
    return malformed(
      400,
      `expected ${article} ${kind} of ${versions.join(' or ')}, got ${show(review.kind, false)} ${show(review.apiVersion, false)}`,
    );
  }
  return { kind: 'read', value: review.apiVersion };
}

function reviewRequest(review: unknown, kind: string): Parsed<Record<string, unknown> & { uid: string }> {
  const request = isObject(review) ? review.request : undefined;
  if (!isObject(request)) return malformed(400, `${kind}.request is missing`);
  const uid = request.uid;
  if (typeof uid !== 'string' || uid === '') return malformed(400, `${kind}.request.uid is missing`);
  return { kind: 'read', value: { ...request, uid } };
}

/** True for a JSON object (not null, not an array). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A value from the request for a message: JSON (or bare, for strings), at most 100 characters. */
function show(v: unknown, quoted = true): string {
  const s = typeof v === 'string' && !quoted ? v : (JSON.stringify(v) ?? String(v));
  return s.length > 100 ? `${s.slice(0, 97)}...` : s;
}

/** An error's message, or the thrown value as text. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** `1s`, `10s`, `500ms`: as the apiserver writes its timeout. */
export function duration(ms: number): string {
  return ms % 1_000 === 0 ? `${ms / 1_000}s` : `${ms}ms`;
}

/** The apiserver's `timeout` query (`10s`, `500ms`); default 10 s, at most 30 s. */
export function parseTimeout(value: string | null): number {
  const m = value === null ? null : /^(\d+)(ms|s|m)$/.exec(value);
  if (!m) return DEFAULT_TIMEOUT_MS;
  const n = Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 's' ? 1_000 : 60_000);
  return Math.min(Math.max(n, 1), MAX_TIMEOUT_MS);
}

/**
 * The body as text; refused (413) past `limit` bytes, `unread` when it has not fully arrived by `deadline`
 * (`performance.now()` time). Either way the rest is drained unread.
 */
function readBody(req: IncomingMessage, limit: number, deadline: number): Promise<Parsed<string>> {
  const tooLarge = malformed(413, `the request body is larger than ${limit} bytes`);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.resolve(tooLarge);
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (outcome: Parsed<string>) => {
      clearTimeout(timer);
      if (!settled) resolve(outcome);
      settled = true;
    };
    const timer = setTimeout(() => settle({ kind: 'unread' }), Math.max(0, deadline - performance.now()));
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > limit) {
        settle(tooLarge);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () =>
      settle({ kind: 'read', value: new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(chunks)) }),
    );
    req.on('error', (err) => settle(malformed(400, `reading the body failed: ${err.message}`)));
  });
}
