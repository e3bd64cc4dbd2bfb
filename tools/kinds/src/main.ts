/**
 * @module tools/kinds/main
 * `npm run kinds`: regenerates packages/runtime/src/client/kinds/ and their schemas (packages/runtime/src/client/schemas/) from the OpenAPI v3 documents of the pinned Kubernetes
 * version, read from its own kube-apiserver (a testenv control plane without nodes, started and stopped here), or with
 * `--openapi-dir <dir>` from a folder laid out as k8s.io/kubernetes' `api/openapi-spec/v3/` of the version given by
 * `--version <vX.Y.Z>`. `--check` writes nothing and exits 1 when the committed files are not current.
 */
import { parseArgs } from 'node:util';
import { start } from '@opkit/testenv';
import { generateAll } from './generate.ts';
import { discoveryPath, type OpenApiDocuments, readFromApiserver, readFromDirectory } from './openapi.ts';
import { REGENERATE, SCHEMAS_DIR, staleGenerated, writeKinds } from './output.ts';
import { GROUP_VERSIONS } from './select.ts';

/** The discovery paths of every generated group version. */
const PATHS: readonly string[] = [...new Set(GROUP_VERSIONS.map((gv) => discoveryPath(gv.group, gv.version)))];

/** The documents and the Kubernetes version of a fresh testenv apiserver (the pinned one). */
export async function fromTestenv(): Promise<{ docs: OpenApiDocuments; version: string }> {
  const env = await start({ nodes: 0, log: () => {} });
  try {
    const get = (path: string) => env.api.request({ path, timeoutMs: 60_000 });
    const version = (await env.api.must<{ gitVersion: string }>({ path: '/version' })).gitVersion;
    return { docs: await readFromApiserver(get, PATHS), version };
  } finally {
    await env.stop();
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { check: { type: 'boolean' }, 'openapi-dir': { type: 'string' }, version: { type: 'string' } },
  });
  const dir = values['openapi-dir'];
  if (dir !== undefined && values.version === undefined) {
    process.stderr.write('--openapi-dir needs --version (the Kubernetes version of the documents, e.g. v1.37.2)\n');
    return 2;
  }
  const { docs, version } =
    dir === undefined
      ? await fromTestenv()
      : { docs: await readFromDirectory(dir, PATHS), version: values.version as string };
  const { kinds, schemas } = generateAll(docs, version);
  if (values.check) {
    const stale = await staleGenerated(kinds, schemas.files);
    if (stale.length === 0) return 0;
    process.stderr.write(`the generated kinds are not current (run \`${REGENERATE}\`):\n  ${stale.join('\n  ')}\n`);
    return 1;
  }
  await writeKinds(kinds);
  await writeKinds(schemas.files, SCHEMAS_DIR);
  process.stdout.write(
    `wrote ${kinds.size} files of Kubernetes ${version} kinds and ${schemas.files.size} of their schemas\n`,
  );
  return 0;
}

if (import.meta.main) process.exitCode = await main();
