/**
 * `npm run generate` (in operators/appservice): writes config/ and dist/install.yaml from the code.
 * `--check`: writes nothing, exits 1 listing the files that are stale (for CI and the test suite).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { manifests } from '../src/manifests.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const stale: string[] = [];
for (const [path, content] of manifests()) {
  const full = join(root, path);
  const current = await readFile(full, 'utf8').catch(() => undefined);
  if (current === content) continue;
  if (path.startsWith('config/samples/') && current !== undefined && !check) continue; // the user's file: never overwritten
  if (check) {
    if (!path.startsWith('config/samples/')) stale.push(path);
    continue;
  }
  await mkdir(dirname(full), { recursive: true });
  await writeFile(full, content);
  process.stdout.write(`wrote ${path}\n`);
}
if (check && stale.length > 0) {
  process.stderr.write(
    `stale generated files (run npm run generate in operators/appservice):\n  ${stale.join('\n  ')}\n`,
  );
  process.exit(1);
}
