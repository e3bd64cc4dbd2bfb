/**
 * docs/releasing.md's package table is the release's own output: the table between `<!-- release-table -->` and
 * `<!-- /release-table -->` must be what `npm run release -- --dry-run --markdown` prints for the packages the plan
 * publishes now — the same packages in release order at the repository's version, their dependencies on ours, bins
 * and exports, in the same layout. The measured cells (files, packed and unpacked size, which change with every
 * source change) are taken from the committed table: refreshing them is the release's job, checked by neither a
 * build nor a registry here.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  commonVersion,
  packageTable,
  plannedPackages,
  readPackageTable,
  releaseOrder,
} from '../scripts/release/plan.ts';
import { workspaces } from '../scripts/release.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const REGENERATE = 'run `npm run release -- --dry-run --markdown` and paste its table between the markers';

test("docs/releasing.md's package table is what the release's --dry-run --markdown prints for the plan now", async () => {
  const doc = await readFile(join(ROOT, 'docs/releasing.md'), 'utf8');
  const m = /^<!-- release-table -->\n\n([\s\S]*?)\n\n<!-- \/release-table -->$/m.exec(doc);
  assert.ok(m, `docs/releasing.md has no <!-- release-table --> … <!-- /release-table --> block: ${REGENERATE}`);
  const table = m[1] as string;
  const order = releaseOrder(await workspaces());
  const planned = plannedPackages(order, commonVersion(order));
  const measured = readPackageTable(table);
  const missing = planned.filter((p) => !measured.has(p.id)).map((p) => p.id);
  assert.deepEqual(missing, [], `docs/releasing.md's table has no row for these: ${REGENERATE}`);
  const expected = packageTable(
    planned.map((p) => ({ ...p, ...(measured.get(p.id) ?? { files: '', packed: '', unpacked: '' }) })),
  );
  assert.equal(table, expected, `docs/releasing.md's table differs from the plan: ${REGENERATE}`);
});
