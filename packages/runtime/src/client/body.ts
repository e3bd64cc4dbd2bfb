/**
 * @module client/body
 * Reading one apiserver response, and the errors of a request that got no full answer.
 *
 * Guarantees:
 * - A body is read whole and decoded as UTF-8 once, after its last byte (a character split across chunks is decoded
 *   whole); a 2xx body is parsed with one `JSON.parse` (an empty one is `undefined`). List callers page with
 *   `limit`/`continue`, so no body becomes a string anywhere near V8's maximum string length.
 * - A body that breaks off (the connection closed or failed before its end) rejects with `ApiError` `Network`; a
 *   request cut off by its signal rejects with the signal's reason when that is an `ApiError` (the deadline's
 *   `Timeout`), else with `Aborted` (the caller's reason as `cause`).
 * - An error answer becomes `ApiError.fromResponse` of its Status (or its text) and its Retry-After header.
 */
import type { IncomingMessage } from 'node:http';
import { ApiError } from './errors.ts';

/** `Aborted`, for the request `describe` (`METHOD path`) that its caller aborted with `reason`. */
export function aborted(describe: string, reason: unknown): ApiError {
  return new ApiError('Aborted', `${describe}: aborted`, { request: describe, cause: reason });
}

/** The error of a request cut off by `signal`: its reason when that is an ApiError (the deadline), else `Aborted`. */
export function cutOff(describe: string, signal: AbortSignal): ApiError {
  return signal.reason instanceof ApiError ? signal.reason : aborted(describe, signal.reason);
}

/** The whole body as text (decoded once, after the last byte). Rejects as `signal` or the connection says. */
export function readBody(res: IncomingMessage, describe: string, signal: AbortSignal | undefined): Promise<string> {
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
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    res.on('error', (err: Error) => fail(err.message, err));
    res.on('aborted', () => fail('the connection closed before the response ended'));
    res.on('close', () => {
      if (!res.complete) fail('the connection closed before the response ended');
    });
  });
}

/** The value of a 2xx body: its JSON, or `undefined` when it is empty. */
export function parseBody<T>(text: string): T {
  return (text.length > 0 ? JSON.parse(text) : undefined) as T;
}

/** The `ApiError` of an error answer: its Status (or its text) and its Retry-After header. */
export function errorAnswer(res: IncomingMessage, text: string, describe: string): ApiError {
  return ApiError.fromResponse(res.statusCode ?? 0, parseMaybe(text), describe, header(res, 'retry-after'));
}

function header(res: IncomingMessage, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function parseMaybe(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
