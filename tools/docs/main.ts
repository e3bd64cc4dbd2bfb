/**
 * @module tools/docs/main
 * `npm run docs`: writes the API reference (see reference.ts) into docs/api/, replacing what was there, and the error
 * table (see errors.ts) into docs/errors.md.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { collectErrorCodes, renderErrorTable } from './errors.ts';
import { convert, OUT_DIR, ROOT, render } from './reference.ts';

const t0 = performance.now();
await render(await convert(), join(ROOT, OUT_DIR));
await writeFile(join(ROOT, 'docs/errors.md'), renderErrorTable(await collectErrorCodes(ROOT)));
process.stdout.write(`wrote ${OUT_DIR}/ and docs/errors.md in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
