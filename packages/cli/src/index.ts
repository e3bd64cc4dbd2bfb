/**
 * @module @opkit/cli
 * The `opkit` command as a library: `run(argv, out, err)` returns the exit code.
 */

export { type ClusterProbe, probeCurrentCluster } from './cluster.ts';
export { CliError, type CliErrorCode } from './errors.ts';
export { HELP, run } from './run.ts';
