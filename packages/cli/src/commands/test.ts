/**
 * @module commands/test
 * `opkit test [node --test arguments…]`: the project's tests on one local control plane for the whole run, on every
 * Node opkit supports (Node 22 has no `--test-global-setup`). It imports `test/setup.ts` (which `opkit init` writes:
 * `shareEnvironment(…)`'s `globalSetup` and `globalTeardown`), runs its `globalSetup`, then `node --test` in a child
 * process that inherits the shared control plane's name (`OPKIT_TESTENV_SHARED`), then its `globalTeardown`. Without
 * arguments the child runs `--test-concurrency=1 "test/**\/*.test.ts"`; arguments replace the files, and
 * `--test-concurrency=1` is added unless they set a concurrency.
 *
 * Guarantees: the exit code is the test run's (a setup that fails is one line and exit 1, and no test runs); the
 * teardown runs once the child has ended, also after Ctrl-C (the terminal sends it to the child too; opkit waits for
 * it), after a SIGTERM (passed on to the child) and when the child was killed. Without test/setup.ts the tests run
 * as given, each file starting its own control plane.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CliError } from '../errors.ts';

export const TEST_HELP = `Usage: opkit test [node --test arguments…]

Runs the project's tests (node --test) on one local control plane for the whole run: test/setup.ts's globalSetup
starts it before the first test file, its globalTeardown stops it after the last, also after Ctrl-C.

Without arguments: node --test --test-concurrency=1 "test/**/*.test.ts". Arguments replace the files (and add
flags; give a flag its value with =), e.g. opkit test test/gadget.test.ts --test-name-pattern=Ready. Exits with the
test run's code.
`;

/** What test/setup.ts exports (`shareEnvironment(…)`'s two functions). */
interface GlobalSetupModule {
  readonly globalSetup: () => Promise<void>;
  readonly globalTeardown: () => Promise<void>;
}

/** Runs `opkit test` (see the module comment); resolves to the exit code. */
export async function testCommand(argv: readonly string[], out: (line: string) => void): Promise<number> {
  if (argv[0] === '--help' || argv[0] === '-h') {
    out(TEST_HELP);
    return 0;
  }
  const setupFile = resolve('test', 'setup.ts');
  const setup = existsSync(setupFile) ? await loadSetup(setupFile) : undefined;
  await setup?.globalSetup();
  try {
    return await runTests(nodeTestArguments(argv));
  } finally {
    await setup?.globalTeardown();
  }
}

/** The arguments of `node` for `argv`: `--test`, the concurrency unless given, and the files (default: all). */
export function nodeTestArguments(argv: readonly string[]): string[] {
  const files = argv.filter((a) => !a.startsWith('-'));
  const concurrency = argv.some((a) => a.startsWith('--test-concurrency')) ? [] : ['--test-concurrency=1'];
  return ['--test', ...concurrency, ...argv, ...(files.length === 0 ? [join('test', '**', '*.test.ts')] : [])];
}

async function loadSetup(file: string): Promise<GlobalSetupModule> {
  const loaded = (await import(pathToFileURL(file).href)) as Partial<Record<keyof GlobalSetupModule, unknown>>;
  const { globalSetup, globalTeardown } = loaded;
  if (typeof globalSetup !== 'function' || typeof globalTeardown !== 'function') {
    throw new CliError(
      'Usage',
      `${file} must export the functions globalSetup and globalTeardown, e.g. ` +
        '`export const { globalSetup, globalTeardown } = shareEnvironment({ nodes: 1 });` (from @opkit/testenv)',
    );
  }
  return { globalSetup: () => globalSetup(), globalTeardown: () => globalTeardown() };
}

/** Runs `node …args` with this terminal; resolves to its exit code (1 when a signal ended it). */
function runTests(args: readonly string[]): Promise<number> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, args, { stdio: 'inherit' });
    // Ctrl-C reaches the child from the terminal: wait for it to end, then tear down; a SIGTERM is passed on
    const wait = () => {};
    const pass = () => child.kill('SIGTERM');
    process.on('SIGINT', wait);
    process.on('SIGTERM', pass);
    const off = () => {
      process.off('SIGINT', wait);
      process.off('SIGTERM', pass);
    };
    child.on('error', (err) => {
      off();
      fail(err);
    });
    child.on('exit', (code) => {
      off();
      done(code ?? 1);
    });
  });
}
