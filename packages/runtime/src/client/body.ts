/**
 * @module client/body
 * Reading one apiserver response, and the errors of a request that got no full answer.
 *
 * Guarantees:
 * - A body is read whole, then decoded once, after its last byte, as its Content-Type says: the protobuf encoding
 *   (client/protobuf/codec.ts, with the request's field mask), else UTF-8 (a character split across chunks is decoded
 *   whole) and one `JSON.parse` (an empty body is `undefined`). List callers page with `limit`/`continue`, so no body
 *   becomes a string anywhere near V8's maximum string length.
 * - A body that breaks off (the connection closed or failed before its end) rejects with `ApiError` `Network`; a
 *   request cut off by its signal rejects with the signal's reason when that is an `ApiError` (the deadline's
 *   `Timeout`), else with `Aborted` (the caller's reason as `cause`).
 * - An error answer becomes `ApiError.fromResponse` of its Status (JSON or protobuf, or its text) and its Retry-After
 *   header.
 */
import type { IncomingMessage } from 'node:http';
import { ApiError } from './errors.ts';
import { decodeEnvelope, isEnvelope, PROTOBUF } from './protobuf/codec.ts';
import type { FieldMask } from './protobuf/reader.ts';

/** `Aborted`, for the request `describe` (`METHOD path`) that its caller aborted with `reason`. */
export function aborted(describe: string, reason: unknown): ApiError {
  return new ApiError('Aborted', `${describe}: aborted`, { request: describe, cause: reason });
}

/** The error of a request cut off by `signal`: its reason when that is an ApiError (the deadline), else `Aborted`. */
export function cutOff(describe: string, signal: AbortSignal): ApiError {
  return signal.reason instanceof ApiError ? signal.reason : aborted(describe, signal.reason);
}

/** The whole body's bytes. Rejects as `signal` or the connection says. */
export function readBody(res: IncomingMessage, describe: string, signal: AbortSignal | undefined): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const fail = (reason: string, cause?: unknown) => {
      if (settled) return;
      settled = true;
      if (signal?.aborted) reject(cutOff(describe, signal));
      else
        reject(
          new ApiError('Network', `${describe}: reading the response failed: ${reason}`, {
            request: describe,
            ...(cause !== undefined ? { cause } : {}),
          }),
        );
    };
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    });
    res.on('error', (err: Error) => fail(err.message, err));
    res.on('aborted', () => fail('the connection closed before the response ended'));
    res.on('close', () => {
      if (!res.complete) fail('the connection closed before the response ended');
    });
  });
}

/** Whether the answer is in the protobuf encoding. */
export function isProtobuf(res: IncomingMessage): boolean {
  const type = res.headers['content-type'];
  return type?.startsWith(PROTOBUF) === true;
}

/**
 * The value of a 2xx body: decoded from protobuf when the answer says so (`mask` skips fields), else its JSON, or
 * `undefined` when it is empty.
 */
export function parseBody<T>(res: IncomingMessage, body: Buffer, mask?: FieldMask): T {
  if (body.length === 0) return undefined as T;
  if (isProtobuf(res)) return decodeEnvelope(body, mask) as T;
  return JSON.parse(body.toString('utf8')) as T;
}

/** The `ApiError` of an error answer: its Status (JSON or protobuf, or its text) and its Retry-After header. */
export function errorAnswer(res: IncomingMessage, body: Buffer, describe: string): ApiError {
  return ApiError.fromResponse(res.statusCode ?? 0, statusOf(res, body), describe, header(res, 'retry-after'));
}

function header(res: IncomingMessage, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function statusOf(res: IncomingMessage, body: Buffer): unknown {
  if (isProtobuf(res) && isEnvelope(body)) {
    try {
      return decodeEnvelope(body);
    } catch {
      return `${body.length} bytes of protobuf that are not a Status`;
    }
  }
  const text = body.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
