/**
 * @module chaos/resets
 * The harness's own writes of AppServices, sent again while a webhook connection reset under the apiserver fails
 * them: the webhook Service (@opkit/testenv/chaos `WebhookService`) resets the connections of a paused replica, and
 * those of a replica that exits end with it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from '@opkit/runtime';

/** How many times `acrossWebhookResets` sends a write. */
const WRITE_ATTEMPTS = 4;

/**
 * Sends one of the harness's own writes (an idempotent PATCH), and sends it again, up to `WRITE_ATTEMPTS` times in
 * all, 100 ms apart, while the apiserver fails it because its connection to a webhook was reset under it. The Service
 * resets the connections of a paused replica (`paused`), and those of a replica that exits end with it; the apiserver
 * keeps such connections for reuse and can write a conversion request onto one just as the reset arrives, and does
 * not send a POST again by itself. A client of a real cluster meets the same refusal when a webhook pod dies, and
 * sends again. The invariants judged are the operator's, so the harness does too. Any other failure, and the last
 * one, is thrown.
 */
export async function acrossWebhookResets<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (attempt >= WRITE_ATTEMPTS || !isWebhookReset(err)) throw err;
      await sleep(100);
    }
  }
}

function isWebhookReset(err: unknown): boolean {
  return (
    err instanceof ApiError &&
    err.status === 500 &&
    /webhook/.test(err.message) &&
    /connection reset by peer|broken pipe|EOF/.test(err.message)
  );
}
