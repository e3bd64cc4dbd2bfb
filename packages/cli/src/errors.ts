/**
 * @module errors
 * `CliError`: a failure the user can act on. `main.ts` prints its message on one line (no stack trace) and exits with
 * its `exitCode`. Errors of @opkit/testenv are shown the same way.
 */
export type CliErrorCode = 'Usage' | 'ClusterNotRunning' | 'ClusterFailed' | 'Timeout';

export class CliError extends Error {
  override readonly name = 'CliError';
  readonly code: CliErrorCode;
  readonly exitCode: number;

  constructor(code: CliErrorCode, message: string, options?: { cause?: unknown; exitCode?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.exitCode = options?.exitCode ?? (code === 'Usage' ? 2 : 1);
  }
}
