/**
 * @module run
 * `run(argv)` is the whole CLI as a function (used by main.ts and by tests): it returns the exit code and writes
 * through the given output functions. It never throws: every failure is one line `opkit: <what happened and what to
 * do>` — usage errors exit 2, others 1; an error opkit did not expect says so and how to get its stack trace
 * (`OPKIT_DEBUG=1`).
 */
import { isApiError } from '@opkit/runtime';
import { KubeconfigError, ManifestError } from '@opkit/runtime/client';
import { isTestenvError } from '@opkit/testenv';
import { buildCommand } from './commands/build.ts';
import { bundleCommand } from './commands/bundle.ts';
import { createApiCommand } from './commands/create-api.ts';
import { createWebhookCommand } from './commands/create-webhook.ts';
import { deployCommand } from './commands/deploy.ts';
import { envCommand } from './commands/env.ts';
import { generateCommand } from './commands/generate.ts';
import { initCommand } from './commands/init.ts';
import { runCommand } from './commands/run-operator.ts';
import { CliError, describeSystemError } from './errors.ts';
import { ownManifest } from './manifest.ts';
import { nodeVersionProblem } from './node-version.ts';

/** The text of `opkit --help`. */
export const HELP = `Usage: opkit <command> [options]

opkit: the operator SDK for TypeScript.

Commands:
  init         create a new operator project
  create api   add an API (custom resource) and optionally its controller
  create webhook  add defaulting, validating or conversion webhooks for a kind
  generate     CRDs, RBAC and manifests from the code (--check for CI)
  run          apply the CRDs and run the operator locally (on 127.0.0.1) against a local or the current cluster
  build        build the operator image (docker, podman or buildah)
  deploy       apply CRDs, RBAC and the Deployment (image substituted) to the cluster
  undeploy     delete them again
  bundle       an OLM bundle (--version X.Y.Z)
  env          a local Kubernetes cluster for development (up, status, down, build)
  check-node   exit 1 with one line if this Node is older than opkit supports (silent otherwise)

Run "opkit <command> --help" for a command's options.
`;

/**
 * Runs `opkit` with `argv` (the arguments after `opkit`) and resolves to its exit code: 0 on success, 2 for a usage
 * error, 1 for any other failure. Output goes to `out`, each failure as one line `opkit: …` to `err`; it never rejects.
 */
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
      case 'init':
        return await initCommand(rest, out);
      case 'create':
        if (rest[0] === 'webhook') return await createWebhookCommand(rest.slice(1), out);
        return await createApiCommand(rest, out);
      case 'generate':
        return await generateCommand(rest, out);
      case 'run':
        return await runCommand(rest, out);
      case 'build':
        return await buildCommand(rest, out);
      case 'deploy':
        return await deployCommand(rest, out, false);
      case 'undeploy':
        return await deployCommand(rest, out, true);
      case 'bundle':
        return await bundleCommand(rest, out);
      case 'check-node': {
        const problem = nodeVersionProblem('opkit', ownManifest().engines.node, process.version);
        if (problem) err(problem);
        return problem ? 1 : 0;
      }
      default:
        throw new CliError('Usage', `unknown command "${command}"; run opkit --help`);
    }
  } catch (e) {
    if (e instanceof CliError) {
      err(`opkit: ${e.message}`);
      return e.exitCode;
    }
    if (isTestenvError(e) || e instanceof KubeconfigError || e instanceof ManifestError || isApiError(e)) {
      err(`opkit: ${e.message}`);
      return 1;
    }
    if (e instanceof TypeError && 'code' in e && String(e.code).startsWith('ERR_PARSE_ARGS')) {
      err(`opkit: ${e.message}; run opkit ${command} --help`);
      return 2;
    }
    const system = describeSystemError(e);
    if (system) {
      err(`opkit: ${system.message}`);
      return system.exitCode;
    }
    const message = e instanceof Error ? e.message.split('\n')[0] : String(e);
    err(
      `opkit: ${command} failed unexpectedly: ${message}` +
        (process.env.OPKIT_DEBUG ? '' : ' (run again with OPKIT_DEBUG=1 for the stack trace, and please report it)'),
    );
    if (process.env.OPKIT_DEBUG && e instanceof Error && e.stack) err(e.stack);
    return 1;
  }
}
