/**
 * @module run
 * `run(argv)` is the whole CLI as a function (used by main.ts and by tests): it returns the exit code and writes
 * through the given output functions.
 */
import { isTestenvError } from '@opkit/testenv';
import { envCommand } from './commands/env.ts';
import { CliError } from './errors.ts';

export const HELP = `Usage: opkit <command> [options]

opkit: the operator SDK for TypeScript.

Commands:
  env      a local Kubernetes cluster for development (up, status, down, build)

Run "opkit <command> --help" for a command's options.
`;

export async function run(
  argv: readonly string[],
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        out(HELP);
        return command === undefined ? 2 : 0;
      case 'env':
        return await envCommand(rest, out);
      default:
        throw new CliError('Usage', `unknown command "${command}"; run opkit --help`);
    }
  } catch (e) {
    if (e instanceof CliError) {
      err(`opkit: ${e.message}`);
      return e.exitCode;
    }
    if (isTestenvError(e)) {
      err(`opkit: ${e.message}`);
      return 1;
    }
    if (e instanceof TypeError && 'code' in e && String(e.code).startsWith('ERR_PARSE_ARGS')) {
      err(`opkit: ${e.message}; run opkit ${command} --help`);
      return 2;
    }
    throw e;
  }
}
