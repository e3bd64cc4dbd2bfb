/**
 * @module commands/build
 * `opkit build [--image NAME[:TAG]] [--dir DIR] [--dry-run]`: builds the operator image with the first container
 * tool found on PATH — docker, podman, then buildah — from the project's Dockerfile. With none, a clear error naming
 * them. `--dry-run` prints the command instead of running it. `opkit build --js` builds what the image runs instead:
 * the operator bundled into dist/operator/ (commands/build-js.ts); the Dockerfile runs it in its build stage.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { delimiter, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CliError } from '../errors.ts';
import { checkImage } from '../project/names.ts';
import { readProject } from '../project/project.ts';
import { bundleOperator } from './build-js.ts';

export const BUILD_HELP = `Usage: opkit build [--image NAME[:TAG]] [--dir DIR] [--dry-run]
       opkit build --js [--dir DIR]

Builds the operator image from the project's Dockerfile with docker, podman or buildah (the first found on PATH).
--image defaults to the PROJECT's image. --dry-run prints the command only.
--js bundles src/main.ts into dist/operator/main.mjs instead: the one program the image runs (its Dockerfile's build
stage runs this), a fraction of the memory and start-up time of loading every module.
`;

export const TOOLS = ['docker', 'podman', 'buildah'] as const;

export async function findTool(
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ tool: (typeof TOOLS)[number]; path: string } | undefined> {
  for (const tool of TOOLS) {
    for (const d of (env.PATH ?? '').split(delimiter)) {
      if (!d) continue;
      const path = join(d, tool);
      if (
        await access(path, constants.X_OK).then(
          () => true,
          () => false,
        )
      )
        return { tool, path };
    }
  }
  return undefined;
}

export function buildArgs(tool: (typeof TOOLS)[number], image: string, dir: string): string[] {
  const file = join(dir, 'Dockerfile');
  return tool === 'buildah'
    ? ['bud', '--layers', '-t', image, '-f', file, dir]
    : ['build', '-t', image, '-f', file, dir];
}

export async function buildCommand(argv: readonly string[], out: (line: string) => void): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      image: { type: 'string' },
      dir: { type: 'string', default: '.' },
      'dry-run': { type: 'boolean', default: false },
      js: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    out(BUILD_HELP);
    return 0;
  }
  const dir = resolve(values.dir);
  if (values.js) {
    await bundleOperator(dir, out);
    return 0;
  }
  const project = await readProject(dir);
  const image = checkImage(values.image ?? project.image);
  const found = await findTool();
  if (!found) {
    throw new CliError(
      'Usage',
      `no container build tool found: install one of ${TOOLS.join(', ')} (looked on PATH), or build ${join(dir, 'Dockerfile')} elsewhere`,
    );
  }
  const args = buildArgs(found.tool, image, dir);
  out(`${found.tool} ${args.join(' ')}`);
  if (values['dry-run']) return 0;
  const child = spawn(found.path, args, { stdio: 'inherit' });
  const code = await new Promise<number>((res) => child.once('exit', (c) => res(c ?? 1)));
  if (code !== 0)
    throw new CliError('Usage', `${found.tool} build failed (exit ${code}); see its output above`, { exitCode: code });
  out(`built ${image}`);
  return 0;
}
