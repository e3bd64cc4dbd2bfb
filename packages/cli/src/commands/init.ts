/**
 * @module commands/init
 * `opkit init <name> [--domain example.com] [--namespace <name>-system] [--image <name>:0.1.0] [--dir DIR]`: a new
 * operator project in DIR (default ./<name>): package.json, tsconfig, src/main.ts (with the markers create api uses),
 * Dockerfile, README, PROJECT. Refuses a directory that already holds a project or any of these files.
 */
import { mkdir, readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CliError } from '../errors.ts';
import { checkDomain, checkImage, checkNamespace, checkProjectName, NAMESPACE_SUFFIX } from '../project/names.ts';
import { PROJECT_FILE, type Project, writeProject } from '../project/project.ts';
import { writeFiles } from '../scaffold/files.ts';
import { initFiles } from '../scaffold/templates.ts';

export const INIT_HELP = `Usage: opkit init <name> [options]

Creates a new operator project.

Options:
  --domain DOMAIN      API groups will be <group>.<domain> (default example.com)
  --namespace NS       where the operator is deployed (default <name>-system)
  --image IMAGE        the operator image (default <name>:0.1.0)
  --dir DIR            where to create it (default ./<name>)
`;

export async function initCommand(argv: readonly string[], out: (line: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      domain: { type: 'string', default: 'example.com' },
      namespace: { type: 'string' },
      image: { type: 'string' },
      dir: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    out(INIT_HELP);
    return 0;
  }
  const [name, extra] = positionals;
  if (!name)
    throw new CliError('Usage', `opkit init needs a project name (e.g. opkit init appservice-operator)\n${INIT_HELP}`);
  if (extra) throw new CliError('Usage', `unexpected argument "${extra}"`);
  const project: Project = {
    layout: 'opkit.dev/v1',
    projectName: checkProjectName(name),
    domain: checkDomain('domain', values.domain),
    namespace: checkNamespace(values.namespace ?? `${name}${NAMESPACE_SUFFIX}`),
    image: checkImage(values.image ?? `${name}:0.1.0`),
    resources: [],
  };
  const dir = resolve(values.dir ?? name);
  const info = await stat(dir).catch(() => undefined);
  if (info && !info.isDirectory()) {
    throw new CliError(
      'Usage',
      `--dir ${dir} is a file, not a directory: pass a directory (it is created when missing), or move the file away`,
    );
  }
  const existing = await readdir(dir).catch(() => [] as string[]);
  if (existing.includes(PROJECT_FILE))
    throw new CliError('Usage', `${join(dir, PROJECT_FILE)} exists: ${dir} is already a project`);
  await mkdir(dir, { recursive: true });
  const result = await writeFiles(dir, initFiles(project));
  await writeProject(dir, project);
  for (const f of [...result.written, PROJECT_FILE]) out(`created ${f}`);
  out(
    `\nNext: cd ${values.dir ?? name} && npm install && npx opkit create api --group app --version v1alpha1 --kind MyKind --controller`,
  );
  return 0;
}
