/**
 * @module create
 * `create-opkit <name> [init options]`: `opkit init` into a folder that must not exist yet. A name that is already a
 * folder (or file) is refused in one line before anything is written, so nothing the user had is touched; everything
 * else — validation, the files, the next steps — is `opkit init`'s.
 */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { run } from '@opkit/cli';

export const CREATE_HELP = `Usage: npm create opkit@latest <name> -- [options]

Creates a new operator project in ./<name> (the folder must not exist yet).

Options (after --, as for "opkit init"):
  --domain DOMAIN      API groups will be <group>.<domain> (default example.com)
  --namespace NS       where the operator is deployed (default <name>-system)
  --image IMAGE        the operator image (default <name>:0.1.0)
  --dir DIR            where to create it (default ./<name>)
`;

export async function createProject(
  argv: readonly string[],
  cwd: string,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: false,
    options: {
      domain: { type: 'string' },
      namespace: { type: 'string' },
      image: { type: 'string' },
      dir: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    out(CREATE_HELP);
    return 0;
  }
  const [name] = positionals;
  if (name === undefined) {
    err('create-opkit: name the project, e.g. npm create opkit@latest my-operator -- --domain example.com');
    return 2;
  }
  const where = typeof values.dir === 'string' ? values.dir : name;
  const dir = resolve(cwd, where);
  const exists = await stat(dir).then(
    () => true,
    () => false,
  );
  if (exists) {
    err(`create-opkit: ${dir} already exists: choose another name, or move it away first (nothing was written)`);
    return 1;
  }
  return run(['init', ...argv], out, err);
}
