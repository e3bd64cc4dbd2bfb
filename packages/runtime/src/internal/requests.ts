/**
 * @module internal/requests
 * What the code that sends requests to the apiserver shares (the client's transport, the metrics endpoint's reviews),
 * so each decision is made in one place:
 * - `linked`: one AbortController that follows several signals for the length of one piece of work, and lets go of
 *   them (`dispose()`) when it ends — unlike `AbortSignal.any`, nothing stays attached to a long-lived signal.
 * - `isDroppedConnection`: whether a Node error is a connection that broke before any answer (reset, refused, broken
 *   pipe, aborted): worth another try for a request that is safe to repeat.
 * - `saysWhenToRetry`: whether an answer asks to be retried later — 429, or 500–504 with a Retry-After — which the
 *   client's transport retries itself (after the delay asked for), so a layer above it does not retry it again.
 */

/** An AbortController that follows other signals until `dispose()`. */
export type Linked = AbortController & { dispose(): void };

/**
 * An AbortController that aborts when any of `signals` does, with the reason `reason` makes of that signal's reason
 * (and the signal itself, to tell sources apart); `dispose()` removes its listeners. An already aborted source aborts
 * it at once.
 */
export function linked(
  signals: readonly (AbortSignal | undefined)[],
  reason: (cause: unknown, source: AbortSignal) => unknown,
): Linked {
  const controller = new AbortController();
  const sources = [...new Set(signals)].filter((x): x is AbortSignal => x !== undefined);
  const listeners = sources.map((source) => {
    const onAbort = () => controller.abort(reason(source.reason, source));
    if (source.aborted) onAbort();
    else source.addEventListener('abort', onAbort, { once: true });
    return () => source.removeEventListener('abort', onAbort);
  });
  const dispose = () => {
    for (const remove of listeners) remove();
  };
  return Object.assign(controller, { dispose });
}

const DROPPED = new Set(['ECONNRESET', 'EPIPE', 'ECONNREFUSED', 'ECONNABORTED']);

/** `err` is the Node error of a connection that broke before any answer (its `code`: reset, pipe, refused, aborted). */
export function isDroppedConnection(err: unknown): boolean {
  const code = err instanceof Error ? (err as NodeJS.ErrnoException).code : undefined;
  return code !== undefined && DROPPED.has(code);
}

/** An answer that asks to be retried later: 429 (after Retry-After, or 1 s), or 500–504 with a Retry-After. */
export function saysWhenToRetry(status: number, retryAfterSeconds: number | undefined): boolean {
  return status === 429 || (status >= 500 && status <= 504 && retryAfterSeconds !== undefined);
}
