/**
 * @module commands/create-webhook
 * `opkit create webhook --group app --version v1 --kind AppService [--defaulting] [--validation] [--conversion]`:
 * scaffolds the kind's handlers (`src/webhooks/<kind>.ts`) and their test on a local control plane
 * (`test/webhooks/<kind>.test.ts`, through `startTestManager({ webhooks })`), registers them (and, with `--conversion`, the kind's
 * versions at /convert) in `src/webhooks.ts` (created if missing), makes `src/main.ts` serve the webhooks, then runs
 * `generate` (webhook configurations, Service, conversion stanza, cert-manager objects, RBAC).
 *
 * Guarantees: the kind must be in PROJECT; at least one of the three flags; an existing `src/webhooks/<kind>.ts` is
 * refused before anything is written; all or nothing, as `create api`: on any failure every file it touched is put
 * back as it was.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CliError, describeSystemError } from '../errors.ts';
import { checkGroupVersionKind, lower } from '../project/names.ts';
import { type ApiEntry, readProject } from '../project/project.ts';
import { writeFiles } from '../scaffold/files.ts';
import {
  kindWebhooksFile,
  kindWebhooksTestFile,
  projectWebhooksFile,
  registerKindWebhooks,
  registerWebhooksInMain,
} from '../scaffold/webhook-templates.ts';
import { takeSnapshot } from './create-api.ts';
import { generate } from './generate.ts';

export const CREATE_WEBHOOK_HELP = `Usage: opkit create webhook --group GROUP --version VERSION --kind KIND [options]

Adds admission and conversion webhooks for a kind of the project, served by the manager (HTTPS :9443): the
handlers in src/webhooks/<kind>.ts, and their test through a local control plane in test/webhooks/<kind>.test.ts.

Options:
  --group GROUP      the kind's short group (as in PROJECT)
  --version VERSION  the version the admission webhooks see (requests for other versions are converted to it)
  --kind KIND        the kind (as in PROJECT)
  --defaulting       a defaulting (mutating) webhook
  --validation       a validating webhook (create, update)
  --conversion       serve the kind's versions at /convert (the kind must be defineKind({ versions, storage, conversions }))
  --dir DIR          the project (default .)
`;

function parseCreateWebhookArgs(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    options: {
      group: { type: 'string' },
      version: { type: 'string' },
      kind: { type: 'string' },
      defaulting: { type: 'boolean', default: false },
      validation: { type: 'boolean', default: false },
      conversion: { type: 'boolean', default: false },
      dir: { type: 'string', default: '.' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }).values;
}

type CreateWebhookFlags = ReturnType<typeof parseCreateWebhookArgs>;

/** What the command writes: the new files, and the new text of src/webhooks.ts and src/main.ts. */
interface WebhookChange {
  readonly files: Map<string, string>;
  readonly webhooksTs: string;
  readonly mainTs: string;
}

/**
 * The change for the kind (`entry` in PROJECT) whose admission webhooks see `version`, from the project's files as
 * they are; a CliError `Usage` when it cannot be made.
 */
async function webhookChange(
  dir: string,
  projectName: string,
  entry: ApiEntry,
  version: string,
  values: CreateWebhookFlags,
): Promise<WebhookChange> {
  const { kind } = entry;
  const api = { ...entry, version };
  const kinds = { defaulting: values.defaulting, validation: values.validation };
  const lk = lower(kind);
  const files = new Map<string, string>();
  if (kinds.defaulting || kinds.validation) {
    files.set(`src/webhooks/${lk}.ts`, kindWebhooksFile(api, kinds));
    files.set(`test/webhooks/${lk}.test.ts`, kindWebhooksTestFile(projectName, api, kinds, values.conversion));
  }
  const read = (path: string) => readFile(join(dir, path), 'utf8').catch(() => undefined);
  const apiPath = `src/api/${version}/${lk}.ts`;
  if ((await read(apiPath)) === undefined) {
    throw new CliError(
      'Usage',
      `${apiPath} does not exist: the admission webhooks see ${kind} as ${version}; add that version's file first (PROJECT has ${entry.version})`,
    );
  }
  if (files.size > 0 && (await read(`src/webhooks/${lk}.ts`)) !== undefined) {
    throw new CliError('Usage', `src/webhooks/${lk}.ts exists: ${kind} already has webhooks; edit that file`);
  }
  const webhooksTs = (await read('src/webhooks.ts')) ?? projectWebhooksFile();
  const mainTs = await read('src/main.ts');
  if (mainTs === undefined)
    throw new CliError('Usage', `${join(dir, 'src/main.ts')} is missing: the webhooks are served there`);
  try {
    return {
      files,
      webhooksTs: registerKindWebhooks(webhooksTs, entry, kinds, values.conversion),
      mainTs: registerWebhooksInMain(mainTs),
    };
  } catch (err) {
    throw new CliError('Usage', `${(err as Error).message}; put it back where the scaffold had it`);
  }
}

/** Writes the change and regenerates, or puts every touched file back as it was; resolves the lines to print. */
async function writeWebhookChange(dir: string, change: WebhookChange): Promise<string[]> {
  const touched = [...change.files.keys(), 'src/webhooks.ts', 'src/main.ts'];
  const snapshot = await takeSnapshot(dir, touched);
  const lines: string[] = [];
  try {
    const result = await writeFiles(dir, change.files);
    await writeFile(join(dir, 'src/webhooks.ts'), change.webhooksTs);
    await writeFile(join(dir, 'src/main.ts'), change.mainTs);
    for (const f of result.written) lines.push(`created ${f}`);
    lines.push('updated src/webhooks.ts, src/main.ts (webhooks served unless ENABLE_WEBHOOKS=false)');
    await generate(dir, false, (line) => lines.push(line));
  } catch (err) {
    await snapshot.restore();
    const reason = describeSystemError(err)?.message ?? (err instanceof Error ? err.message : String(err));
    throw new CliError(
      err instanceof CliError ? err.code : 'Usage',
      `${reason}; nothing was kept: src/webhooks.ts, src/main.ts and the webhook files are as they were; fix that, then run the same command again`,
      { cause: err, exitCode: err instanceof CliError ? err.exitCode : 1 },
    );
  }
  return lines;
}

/** `opkit create webhook` (see the module comment). */
export async function createWebhookCommand(argv: readonly string[], out: (line: string) => void): Promise<number> {
  const values = parseCreateWebhookArgs(argv);
  if (values.help) {
    out(CREATE_WEBHOOK_HELP);
    return 0;
  }
  const { group, version, kind } = checkGroupVersionKind(values, CREATE_WEBHOOK_HELP);
  if (!values.defaulting && !values.validation && !values.conversion) {
    throw new CliError(
      'Usage',
      `choose at least one of --defaulting, --validation, --conversion\n${CREATE_WEBHOOK_HELP}`,
    );
  }
  const dir = resolve(values.dir);
  const project = await readProject(dir);
  const entry = project.resources.find((r) => r.kind === kind && r.group === group);
  if (!entry) {
    throw new CliError('Usage', `${kind} (group ${group}) is not in PROJECT: run opkit create api first`);
  }
  const change = await webhookChange(dir, project.projectName, entry, version, values);
  for (const line of await writeWebhookChange(dir, change)) out(line);
  return 0;
}
