/**
 * @module commands/create-api
 * `opkit create api --group app --version v1alpha1 --kind AppService [--plural …] [--namespaced=false] [--controller]`:
 * the API's TypeBox schema file and a sample; with `--controller`, a controller with a working reconcile skeleton and
 * its declared permissions, its registration in src/main.ts (at the marker), and a test on a real control plane.
 * Then runs `generate`. A kind already in PROJECT, or a file that exists, is refused before anything is written.
 * All or nothing: if anything fails after the first write (generate cannot load the new API, a write fails), every
 * file written, src/main.ts and PROJECT are put back as they were, so the same command can simply be run again.
 */
import { readFile, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CliError, describeSystemError } from '../errors.ts';
import { checkGroupVersionKind, lower, plural } from '../project/names.ts';
import { type ApiEntry, PROJECT_FILE, type Project, readProject, writeProject } from '../project/project.ts';
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

function parseCreateApiArgs(args: string[]) {
  return parseArgs({
    args,
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
  }).values;
}

/** The API entry the flags describe, checked (a CliError `Usage` names the flag and the rule). */
function apiEntryOf(values: ReturnType<typeof parseCreateApiArgs>): ApiEntry {
  const { group, version, kind } = checkGroupVersionKind(values, CREATE_API_HELP);
  if (!['true', 'false'].includes(values.namespaced))
    throw new CliError('Usage', `--namespaced must be true or false, got "${values.namespaced}"`);
  const pl = values.plural ?? plural(kind);
  if (!/^[a-z][a-z0-9]*$/.test(pl))
    throw new CliError('Usage', `plural "${pl}" must be lower-case letters and digits (e.g. appservices)`);
  return { group, version, kind, plural: pl, namespaced: values.namespaced === 'true', controller: values.controller };
}

/** The files of the API (and its controller), and src/main.ts with the controller registered (with `--controller`). */
async function apiChange(dir: string, project: Project, api: ApiEntry) {
  const { kind } = api;
  const files = new Map<string, string>([
    [`src/api/${api.version}/${lower(kind)}.ts`, apiFile(project, api)],
    [`config/samples/${api.group}_${api.version}_${lower(kind)}.yaml`, sampleFile(project, api)],
  ]);
  if (!api.controller) return { files, main: undefined };
  files.set(`src/controllers/${lower(kind)}.ts`, controllerFile(project, api));
  files.set(`test/${lower(kind)}.test.ts`, controllerTestFile(project, api));
  const mainPath = join(dir, 'src/main.ts');
  const current = await readFile(mainPath, 'utf8').catch(() => {
    throw new CliError('Usage', `${mainPath} is missing: create api --controller registers the controller there`);
  });
  try {
    return { files, main: registerController(current, api) };
  } catch (err) {
    throw new CliError('Usage', `${mainPath}: ${(err as Error).message}; put it back where controllers are registered`);
  }
}

/**
 * Writes the files, src/main.ts and PROJECT, then regenerates; on any failure puts every touched file back as it was.
 * Resolves the lines to print.
 */
async function writeApiChange(
  dir: string,
  project: Project,
  api: ApiEntry,
  { files, main }: { files: Map<string, string>; main: string | undefined },
): Promise<string[]> {
  const touched = [...files.keys(), ...(main !== undefined ? ['src/main.ts'] : []), PROJECT_FILE];
  const snapshot = await takeSnapshot(dir, touched);
  const lines: string[] = [];
  try {
    const result = await writeFiles(dir, files);
    if (main !== undefined) {
      await writeFile(join(dir, 'src/main.ts'), main);
      result.written.push('src/main.ts (controller registered)');
    }
    project.resources.push(api);
    await writeProject(dir, project);
    for (const f of result.written) lines.push(`created ${f}`);
    await generate(dir, false, (line) => lines.push(line));
  } catch (err) {
    await snapshot.restore();
    const reason = describeSystemError(err)?.message ?? (err instanceof Error ? err.message : String(err));
    throw new CliError(
      err instanceof CliError ? err.code : 'Usage',
      `${reason}; nothing was kept: the files of ${api.kind}, src/main.ts and PROJECT are as they were; fix that, then run the same command again`,
      { cause: err, exitCode: err instanceof CliError ? err.exitCode : 1 },
    );
  }
  return lines;
}

/** `opkit create api` (see the module comment); `opkit create` of anything else is a usage error. */
export async function createApiCommand(argv: readonly string[], out: (line: string) => void): Promise<number> {
  const [what, ...rest] = argv;
  if (what === '--help' || what === '-h') {
    out(CREATE_API_HELP);
    return 0;
  }
  if (what !== 'api')
    throw new CliError(
      'Usage',
      `unknown "create ${what ?? ''}": create an api or a webhook (opkit create webhook --help)\n${CREATE_API_HELP}`,
    );
  const values = parseCreateApiArgs(rest);
  if (values.help) {
    out(CREATE_API_HELP);
    return 0;
  }
  const api = apiEntryOf(values);
  const dir = resolve(values.dir);
  const project = await readProject(dir);
  const clash = project.resources.find(
    (r) => r.kind === api.kind || (r.plural === api.plural && r.group === api.group),
  );
  if (clash) {
    throw new CliError(
      'Usage',
      `the project already has ${clash.kind} (${clash.group}/${clash.version}, PROJECT): choose another kind`,
    );
  }
  const change = await apiChange(dir, project, api);
  for (const line of await writeApiChange(dir, project, api, change)) out(line);
  return 0;
}

/** What `paths` (relative to `dir`) hold now, and the directories that do not exist yet, to put back on failure. */
export async function takeSnapshot(dir: string, paths: readonly string[]): Promise<{ restore: () => Promise<void> }> {
  const before = new Map<string, string | undefined>();
  const newDirs = new Set<string>();
  for (const path of paths) {
    before.set(path, await readFile(join(dir, path), 'utf8').catch(() => undefined));
    for (let d = dirname(join(dir, path)); d.startsWith(`${dir}/`); d = dirname(d)) {
      if (
        await stat(d).then(
          () => false,
          () => true,
        )
      )
        newDirs.add(d);
    }
  }
  return {
    restore: async () => {
      for (const [path, content] of before) {
        if (content === undefined) await rm(join(dir, path), { force: true });
        else await writeFile(join(dir, path), content);
      }
      for (const d of [...newDirs].sort((a, b) => b.length - a.length)) await rmdir(d).catch(() => {});
    },
  };
}
