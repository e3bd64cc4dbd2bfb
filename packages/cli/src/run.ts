/**
 * @module run
 * `run(argv)` is the whole CLI as a function (used by main.ts and by tests): it returns the exit code and writes
 * through the given output functions. It never throws: every failure is one line `opkit: <what happened and what to
 * do>` — usage errors exit 2, others 1; an error opkit did not expect says so and how to get its stack trace
 * (`OPKIT_DEBUG=1`). Each command's module is loaded when that command runs, so a command pays only for its own.
 */
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
  test         the tests (node --test) on one local control plane for the whole run (npm test)
  chaos        the operator under faults (crashes between writes, stale views, pauses): finds the bugs tests miss
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
        return await (await import('./commands/env.ts')).envCommand(rest, out);
      case 'init':
        return await (await import('./commands/init.ts')).initCommand(rest, out);
      case 'create':
        if (rest[0] === 'webhook')
          return await (await import('./commands/create-webhook.ts')).createWebhookCommand(rest.slice(1), out);
        return await (await import('./commands/create-api.ts')).createApiCommand(rest, out);
      case 'generate':
        return await (await import('./commands/generate.ts')).generateCommand(rest, out);
      case 'test':
        return await (await import('./commands/test.ts')).testCommand(rest, out);
      case 'chaos':
        return await (await import('./commands/chaos.ts')).chaosCommand(rest, out);
      case 'run':
        return await (await import('./commands/run-operator.ts')).runCommand(rest, out);
      case 'build':
        return await (await import('./commands/build.ts')).buildCommand(rest, out);
      case 'deploy':
        return await (await import('./commands/deploy.ts')).deployCommand(rest, out, false);
      case 'undeploy':
        return await (await import('./commands/deploy.ts')).deployCommand(rest, out, true);
      case 'bundle':
        return await (await import('./commands/bundle.ts')).bundleCommand(rest, out);
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
    const known = await knownErrorMessage(e);
    if (known !== undefined) {
      err(`opkit: ${known}`);
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

/**
 * The message of `e` when it is an error of opkit's libraries, whose message says what to do (testenv, kubeconfig,
 * manifest, API); else undefined. Their modules are loaded only when there is an error, so a command that succeeds
 * does not pay for them.
 */
async function knownErrorMessage(e: unknown): Promise<string | undefined> {
  const [{ isApiError }, { KubeconfigError, ManifestError }, { isTestenvError }] = await Promise.all([
    import('@opkit/runtime'),
    import('@opkit/runtime/client'),
    import('@opkit/testenv'),
  ]);
  return isTestenvError(e) || e instanceof KubeconfigError || e instanceof ManifestError || isApiError(e)
    ? e.message
    : undefined;
}
