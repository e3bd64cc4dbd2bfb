/**
 * @module commands/create-api
 * `opkit create api --group app --version v1alpha1 --kind AppService [--plural …] [--namespaced=false] [--controller]`:
 * the API's TypeBox schema file and a sample; with `--controller`, a controller with a working reconcile skeleton and
 * its declared permissions, its registration in src/main.ts (at the marker), and a test on a real control plane.
 * Then runs `generate`. A kind already in PROJECT, or a file that exists, is refused before anything is written.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CliError } from '../errors.ts';
import { checkGroup, checkKind, checkVersion, lower, plural } from '../project/names.ts';
import { type ApiEntry, readProject, writeProject } from '../project/project.ts';
import { writeFiles } from '../scaffold/files.ts';
import { apiFile, controllerFile, controllerTestFile, registerController, sampleFile } from '../scaffold/templates.ts';
import { generate } from './generate.ts';

export const CREATE_API_HELP = `Usage: opkit create api --group GROUP --version VERSION --kind KIND [options]

Adds an API (a custom resource) to the project, and optionally its controller.

Options:
  --group GROUP          short group; the API group is GROUP.<domain> (e.g. app)
  --version VERSION      v1, v1alpha1, v2beta3, …
  --kind KIND            UpperCamelCase kind (e.g. AppService)
  --plural PLURAL        lower-case plural (default: derived from the kind)
  --namespaced BOOL      namespaced (default true) or cluster-scoped
  --controller           also scaffold a controller and its test
  --dir DIR              the project (default .)
`;

export async function createApiCommand(argv: readonly string[], out: (line: string) => void): Promise<number> {
  const [what, ...rest] = argv;
  if (what === '--help' || what === '-h') {
    out(CREATE_API_HELP);
    return 0;
  }
  if (what !== 'api')
    throw new CliError(
      'Usage',
      `unknown "create ${what ?? ''}": the only thing to create is an api\n${CREATE_API_HELP}`,
    );
  const { values } = parseArgs({
    args: rest,
    options: {
      group: { type: 'string' },
      version: { type: 'string' },
      kind: { type: 'string' },
      plural: { type: 'string' },
      namespaced: { type: 'string', default: 'true' },
      controller: { type: 'boolean', default: false },
      dir: { type: 'string', default: '.' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    out(CREATE_API_HELP);
    return 0;
  }
  for (const f of ['group', 'version', 'kind'] as const) {
    if (!values[f]) throw new CliError('Usage', `--${f} is required\n${CREATE_API_HELP}`);
  }
  if (!['true', 'false'].includes(values.namespaced))
    throw new CliError('Usage', `--namespaced must be true or false, got "${values.namespaced}"`);
  const kind = checkKind(values.kind as string);
  const pl = values.plural ?? plural(kind);
  if (!/^[a-z][a-z0-9]*$/.test(pl))
    throw new CliError('Usage', `plural "${pl}" must be lower-case letters and digits (e.g. appservices)`);
  const dir = resolve(values.dir);
  const project = await readProject(dir);
  const api: ApiEntry = {
    group: checkGroup(values.group as string),
    version: checkVersion(values.version as string),
    kind,
    plural: pl,
    namespaced: values.namespaced === 'true',
    controller: values.controller,
  };
  const clash = project.resources.find((r) => r.kind === kind || (r.plural === pl && r.group === api.group));
  if (clash) {
    throw new CliError(
      'Usage',
      `the project already has ${clash.kind} (${clash.group}/${clash.version}, PROJECT): choose another kind`,
    );
  }
  const files = new Map<string, string>([
    [`src/api/${api.version}/${lower(kind)}.ts`, apiFile(project, api)],
    [`config/samples/${api.group}_${api.version}_${lower(kind)}.yaml`, sampleFile(project, api)],
  ]);
  let main: string | undefined;
  if (api.controller) {
    files.set(`src/controllers/${lower(kind)}.ts`, controllerFile(project, api));
    files.set(`test/${lower(kind)}.test.ts`, controllerTestFile(project, api));
    const mainPath = join(dir, 'src/main.ts');
    const current = await readFile(mainPath, 'utf8').catch(() => {
      throw new CliError('Usage', `${mainPath} is missing: create api --controller registers the controller there`);
    });
    try {
      main = registerController(current, api);
    } catch (err) {
      throw new CliError(
        'Usage',
        `${mainPath}: ${(err as Error).message}; put it back where controllers are registered`,
      );
    }
  }
  const result = await writeFiles(dir, files);
  if (main !== undefined) {
    await writeFile(join(dir, 'src/main.ts'), main);
    result.written.push('src/main.ts (controller registered)');
  }
  project.resources.push(api);
  await writeProject(dir, project);
  for (const f of result.written) out(`created ${f}`);
  await generate(dir, false, out);
  return 0;
}
