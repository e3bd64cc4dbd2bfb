/**
 * @module errors
 * `CliError`: a failure the user can act on, with a `code` saying which (and its cause, when it wraps one). `main.ts` prints its message on one line (no stack trace) and exits with
 * its `exitCode`. Errors of @opkit/testenv are shown the same way. `describeSystemError` turns a failed file-system or
 * process call (ENOTDIR, EACCES, …) into such a one-line message naming the path and what to do.
 */
/**
 * What went wrong, for callers that branch on it; usage errors (`Usage`, `UnknownCluster`, `ClusterAmbiguous`) exit 2.
 */
export type CliErrorCode =
  /** A command, flag, argument or project file is wrong: the message names it and what to write instead (exit 2). */
  | 'Usage'
  /** `--cluster NAME` names no local cluster, or not a valid name (a usage error: exit 2). */
  | 'UnknownCluster'
  /** Several local clusters run and nothing chooses one (a usage error: exit 2). */
  | 'ClusterAmbiguous'
  /** No cluster answers where the command looked (local cluster, KUBECONFIG, `--kubeconfig`): start or name one. */
  | 'ClusterNotRunning'
  /** The cluster refused or failed a request (the message says what was written), or a local cluster failed to start. */
  | 'ClusterFailed'
  /** A wait ran out: a local cluster not ready, a CRD not Established in time. */
  | 'Timeout'
  /** A file-system or process call failed on a path (ENOTDIR, EACCES, …): the message names the path and what to do. */
  | 'FileSystem'
  /** helm could not run, or failed: the message has helm's last lines. */
  | 'HelmFailed'
  /** A local port the operator would listen on is taken (`opkit run`, before it writes anything). */
  | 'PortInUse'
  /** An object `opkit run` would write belongs to another run or to a deployment (nothing was written). */
  | 'OwnedElsewhere'
  /** `opkit env down` would stop a cluster a live `opkit run` uses (nothing was stopped; `--force` stops it). */
  | 'ClusterInUse'
  /** The cluster does not serve a kind of the manifests, or a namespace is missing (nothing was applied). */
  | 'NotServed'
  /** A write failed after others succeeded: the message lists what was applied. */
  | 'PartiallyApplied'
  /** A package's `engines.node` is not of the form `>=X.Y[.Z]`, so the Node check cannot tell the minimum. */
  | 'EnginesRangeInvalid'
  /**
   * A file `opkit create` edits lacks the marker line it inserts at (`// +opkit:scaffold:…`): put the marker back
   * where the scaffold had it, and run the command again (nothing was written).
   */
  | 'ScaffoldMarkerMissing'
  /**
   * The apiserver would refuse a generated CRD (a CEL rule that does not compile or costs over budget, a schema that is
   * not structural): the message names the API file, the version, the schema path and the rule (nothing was written).
   */
  | 'SchemaRejected'
  /**
   * An expression of a Validating- or MutatingAdmissionPolicy does not compile, or does not type-check against a kind it
   * matches: the message names the policy, the field and the expression (nothing was written).
   */
  | 'PolicyRejected'
  /** `opkit chaos`: the operator does not start (`node src/main.ts --help` fails); the message has the start of its output. */
  | 'OperatorDoesNotStart';

const USAGE_CODES: ReadonlySet<CliErrorCode> = new Set(['Usage', 'UnknownCluster', 'ClusterAmbiguous']);

/** A failure of an `opkit` command the user can act on: `message` is one line saying what happened and what to do. */
export class CliError extends Error {
  override readonly name = 'CliError';
  /** Which failure this is. */
  readonly code: CliErrorCode;
  /**
   * The process exit code `opkit` ends with: 2 for usage errors, 1 otherwise, unless the constructor was given one.
   */
  readonly exitCode: number;

  constructor(code: CliErrorCode, message: string, options?: { cause?: unknown; exitCode?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.exitCode = options?.exitCode ?? (USAGE_CODES.has(code) ? 2 : 1);
  }
}

const SYSTEM_ERRORS: Readonly<Record<string, string>> = {
  ENOTDIR: 'a part of this path is a file, not a directory: choose another path or move that file away',
  EISDIR: 'is a directory where a file is expected: choose another path or move that directory away',
  EEXIST: 'already exists and is in the way: choose another path or move it away',
  ENOENT: 'does not exist: check the path',
  EACCES: 'permission denied: fix its permissions or choose another path',
  EPERM: 'operation not permitted: fix its permissions or choose another path',
  EROFS: 'is on a read-only file system: choose a writable path',
  ENOSPC: 'no space left on the device: free some space and run the command again',
  ENAMETOOLONG: 'the path is too long: choose a shorter one',
};

/** A `CliError` for a failed system call with a path (a Node `ErrnoException`), or undefined for any other error. */
export function describeSystemError(err: unknown): CliError | undefined {
  if (!(err instanceof Error)) return undefined;
  const { code, path, syscall } = err as NodeJS.ErrnoException;
  if (typeof code !== 'string' || typeof syscall !== 'string' || typeof path !== 'string') return undefined;
  const what = SYSTEM_ERRORS[code] ?? `${syscall} failed with ${code}: check the path and its permissions`;
  return new CliError('FileSystem', `${path}: ${what}`, { cause: err });
}
