/**
 * @module generate/check-memo
 * What the offline checks (generate/check-crds, generate/check-samples) last passed on, so that `opkit generate` run
 * again on the same inputs (every `npm test`'s pretest, most of them with nothing changed) does not load the
 * apiserver's validation (about 2 s, most of `generate --check`'s time) to give the same answer.
 *
 * Guarantees: a pass is reused only for the same inputs, byte for byte: every generated CRD, every policy's manifests,
 * the name and bytes of every sample file, the validator's manifest (its Kubernetes version, Go and the digest of its
 * sources) and this CLI's version. A failure is never recorded: it is checked again each time, so its message is
 * always the validator's. The record is a file of digests in the project's `node_modules/.cache/opkit/` (where babel
 * and eslint keep theirs), the last 16 passes; a record that cannot be read or written is ignored, and deleting it
 * costs one load of the validator.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { prepareValidator } from '@opkit/testenv/cel';
import { ownManifest } from '../manifest.ts';
import type { Project } from '../project/project.ts';
import { sampleFiles } from './check-samples.ts';
import { crdObject, type LoadedApi, policiesOf } from './manifests.ts';

const RECORD = join('node_modules', '.cache', 'opkit', 'generate-checks.json');
/** How many passes the record keeps (a few branches' worth of inputs). */
const KEEP = 16;

/** The inputs' digest, and whether the checks passed on them before. */
export interface CheckMemo {
  readonly passed: boolean;
  /** Records that the checks passed on these inputs. */
  record(): Promise<void>;
}

/** The digest of the checks' inputs (see the module comment). */
export async function checksDigest(dir: string, p: Project, apis: readonly LoadedApi[]): Promise<string> {
  const hash = createHash('sha256');
  const add = (label: string, data: string | Uint8Array) => {
    hash.update(`${label}\0${data.length}\0`);
    hash.update(data);
  };
  add('cli', ownManifest().version);
  add('validator', JSON.stringify(await prepareValidator({ log: () => {} })));
  for (const api of apis) add('crd', JSON.stringify(crdObject(p, api)));
  for (const policy of policiesOf(apis)) add('policy', JSON.stringify(policy.manifests()));
  for (const file of await sampleFiles(dir)) {
    add('sample', file);
    add('bytes', await readFile(join(dir, file)));
  }
  return hash.digest('hex');
}

/** The memo of the project in `dir` for these inputs. */
export async function checkMemo(dir: string, p: Project, apis: readonly LoadedApi[]): Promise<CheckMemo> {
  const digest = await checksDigest(dir, p, apis);
  const path = join(dir, RECORD);
  const passes = await readPasses(path);
  return {
    passed: passes.includes(digest),
    async record() {
      const next = [digest, ...passes.filter((d) => d !== digest)].slice(0, KEEP);
      const partial = `${path}.partial-${process.pid}`;
      try {
        await mkdir(join(dir, 'node_modules', '.cache', 'opkit'), { recursive: true });
        await writeFile(partial, `${JSON.stringify({ passes: next }, null, 2)}\n`);
        await rename(partial, path);
      } catch {
        // a read-only or missing node_modules: the next run checks again
      }
    },
  };
}

async function readPasses(path: string): Promise<string[]> {
  try {
    const { passes } = JSON.parse(await readFile(path, 'utf8')) as { passes?: unknown };
    return Array.isArray(passes) ? passes.filter((d): d is string => typeof d === 'string') : [];
  } catch {
    return [];
  }
}
