/**
 * @module commands/build
 * `opkit build [--image NAME[:TAG]] [--dir DIR] [--dry-run]`: builds the operator image with the first container
 * tool found on PATH — docker, podman, then buildah — from the project's Dockerfile. With none, a clear error naming
 * them. `--dry-run` prints the command instead of running it.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { delimiter, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CliError } from '../errors.ts';
import { checkImage } from '../project/names.ts';
import { readProject } from '../project/project.ts';

export const BUILD_HELP = `Usage: opkit build [--image NAME[:TAG]] [--dir DIR] [--dry-run]

Builds the operator image from the project's Dockerfile with docker, podman or buildah (the first found on PATH).
--image defaults to the PROJECT's image. --dry-run prints the command only.
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
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    out(BUILD_HELP);
    return 0;
  }
  const dir = resolve(values.dir);
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
