/**
 * @module webhook/errors
 * `WebhookServerError`: why a webhook server cannot start, serve or pass its readiness check. Each code names one
 * cause; misuse of the server is a `UsageError` instead.
 */
import { OpkitError } from '../errors.ts';

/**
 * Why a webhook server cannot do what was asked. Misuse is a `UsageError` instead: `start()` twice (`AlreadyStarted`),
 * a path that does not start with `/` (`InvalidArgument`).
 */
export type WebhookServerErrorCode =
  /** `start()` cannot listen on the bind address (the port is taken, or the address is not the host's); see `cause`. */
  | 'WebhookBindFailed'
  /** Two handlers were registered for one path: register each path once. */
  | 'DuplicatePath'
  /** The server stopped: `listening` when it stopped before it listened, `ready()` from the moment its stop begins. */
  | 'WebhookServerStopped'
  /**
   * `ready()`: the server does not listen (yet): before `start()`, while it binds, or after its bind failed. A
   * readiness probe fails until it listens (await `listening` to wait for it).
   */
  | 'WebhookNotListening'
  /** `ready()`: the server listens, but a TLS handshake with it failed or timed out (2 s); see `cause`. */
  | 'WebhookHandshakeFailed';

/** A webhook server that cannot do what was asked; `code` says why. */
export class WebhookServerError extends OpkitError<WebhookServerErrorCode> {
  override readonly name = 'WebhookServerError';
}
