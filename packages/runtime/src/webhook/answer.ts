/**
 * @module webhook/answer
 * Answering one review: reads it (webhook/review), runs its handler within the review's budget, and turns what
 * happened into the reply the apiserver expects. Internal to the webhook server.
 *
 * Guarantees:
 * - The handler runs with a signal that aborts at the budget's end, and the answer is settled then at the latest:
 *   whatever the handler does afterwards is dropped. With no time left, the handler is not called.
 * - A handler still running at the deadline, or a body still arriving, is answered with a 504 `Status` (reason
 *   `Timeout`); a body still arriving also closes the connection, with the rest of the body.
 * - An admission handler that throws or returns no response denies with code 500 naming its path; a malformed
 *   admission review is denied inside an AdmissionReview (400, or 413 for the size, which closes the connection).
 * - A conversion handler that throws or runs late answers a `Failure` result; a malformed conversion review a plain
 *   400 (413 for the size).
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../logger.ts';
import type { AdmissionHandler } from './admission.ts';
import type { ConversionHandler, ConversionResponse } from './conversion.ts';
import {
  admissionReview,
  duration,
  errorMessage,
  isObject,
  json,
  type Reply,
  readAdmission,
  readConversion,
  text,
} from './review.ts';

/**
 * The time a review may take, fixed at its arrival: the apiserver's `timeoutMs`, and the `budgetMs` of it the server
 * uses, up to `deadline` (`performance.now()` time) — the body's read and the handler share it.
 */
export interface Budget {
  /** The apiserver's timeout for this call. */
  readonly timeoutMs: number;
  /** The part of it the server uses (the rest is the margin for the answer to travel back). */
  readonly budgetMs: number;
  /** When the budget ends, in `performance.now()` time. */
  readonly deadline: number;
}

/** What the server keeps of the apiserver's timeout for the answer to travel back. */
const TIMEOUT_MARGIN_MS = 250;

/**
 * The budget of a review that arrived at `started` (`performance.now()` time) with the apiserver's `timeoutMs`: it
 * ends 250 ms before the timeout (at least 1 ms after the arrival).
 */
export function budgetOf(timeoutMs: number, started: number): Budget {
  const budgetMs = Math.max(timeoutMs - TIMEOUT_MARGIN_MS, 1);
  return { timeoutMs, budgetMs, deadline: started + budgetMs };
}

/** What answering a review needs besides the request: where to log, and the largest body to read. */
export interface Answering {
  /** Where failed and late handlers are logged. */
  readonly log: Logger;
  /** Largest accepted body, in bytes. */
  readonly maxBodyBytes: number;
}

/** How a handler's call ended: with a response, by failing (a throw, or no response), or past its deadline. */
type Outcome<T> =
  | { readonly kind: 'answered'; readonly value: T }
  | { readonly kind: 'failed'; readonly failure: string }
  | { readonly kind: 'late' };

/**
 * The 504 for a review not answered in time: its handler still running, or its body still arriving (then `close`:
 * the connection goes, with the rest of the body).
 */
function late(a: Answering, path: string, uid: string, message: string, close: boolean): Reply {
  a.log.warn({ webhook: path, uid }, message);
  const status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Timeout', code: 504 };
  return { ...json(504, { ...status, message }), close };
}

function within(budget: Budget): string {
  return `within ${budget.budgetMs} ms (the apiserver's timeout: ${duration(budget.timeoutMs)})`;
}

/** Answers one AdmissionReview at `path` with `handler`. */
export async function answerAdmission(
  a: Answering,
  req: IncomingMessage,
  path: string,
  handler: AdmissionHandler,
  budget: Budget,
): Promise<Reply> {
  const read = await readAdmission(req, a.maxBodyBytes, budget.deadline);
  if (read.kind === 'unread') {
    return late(a, path, read.uid, `the admission request to ${path} was not received ${within(budget)}`, true);
  }
  const { apiVersion } = read;
  if (read.kind === 'malformed') {
    const reason = read.status === 413 ? 'RequestEntityTooLarge' : 'BadRequest';
    const status = { status: 'Failure' as const, code: read.status, reason, message: read.message };
    const big = read.status === 413;
    return { ...admissionReview(apiVersion, { uid: read.uid, allowed: false, status }), close: big, drain: big };
  }
  const { request } = read;
  const uid = request.uid;
  const outcome = await runHandler(budget.deadline, (signal) => handler(request, { signal }));
  if (outcome.kind === 'late') {
    return late(a, path, uid, `the admission handler at ${path} did not answer ${within(budget)}`, false);
  }
  if (outcome.kind === 'failed') {
    const message = `the admission handler at ${path} ${outcome.failure}`;
    a.log.error({ webhook: path, uid }, message);
    return admissionReview(apiVersion, {
      uid,
      allowed: false,
      status: { status: 'Failure', code: 500, reason: 'InternalError', message },
    });
  }
  return admissionReview(apiVersion, { ...outcome.value, uid });
}

/** Answers one ConversionReview at `path` with `handler`. */
export async function answerConversion(
  a: Answering,
  req: IncomingMessage,
  path: string,
  handler: ConversionHandler,
  budget: Budget,
): Promise<Reply> {
  const read = await readConversion(req, a.maxBodyBytes, budget.deadline);
  if (read.kind === 'unread') {
    return late(a, path, '', `the conversion request to ${path} was not received ${within(budget)}`, true);
  }
  if (read.kind === 'malformed') {
    const big = read.status === 413;
    return { ...text(read.status, read.message), close: big, drain: big };
  }
  const { apiVersion, request } = read;
  const outcome = await runHandler(budget.deadline, (signal) => handler(request, { signal }));
  let response: ConversionResponse;
  if (outcome.kind === 'answered') {
    response = { ...outcome.value, uid: request.uid };
  } else {
    const message =
      outcome.kind === 'late'
        ? `the conversion handler at ${path} did not answer ${within(budget)}`
        : `the conversion handler at ${path} ${outcome.failure}`;
    a.log.error({ webhook: path, uid: request.uid }, message);
    response = { uid: request.uid, convertedObjects: [], result: { status: 'Failure', message } };
  }
  return json(200, { apiVersion, kind: 'ConversionReview', response });
}

/**
 * Runs a handler with a signal that aborts at `deadline` (`performance.now()` time: the end of the review's budget),
 * and settles then at the latest: whatever the handler does afterwards is dropped. With no time left, the handler is
 * not called.
 */
function runHandler<T extends object>(
  deadline: number,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<Outcome<T>> {
  const leftMs = deadline - performance.now();
  if (leftMs <= 0) return Promise.resolve({ kind: 'late' });
  const cut = new AbortController();
  return new Promise<Outcome<T>>((resolve) => {
    const timer = setTimeout(() => {
      cut.abort();
      resolve({ kind: 'late' });
    }, leftMs);
    // a handler that throws before its first await has failed too
    (async () => work(cut.signal))().then(
      (value) => {
        clearTimeout(timer);
        resolve(isObject(value) ? { kind: 'answered', value } : { kind: 'failed', failure: 'returned no response' });
      },
      (error: unknown) => {
        clearTimeout(timer);
        resolve({ kind: 'failed', failure: `failed: ${errorMessage(error)}` });
      },
    );
  });
}
