/**
 * @module tools/docs/main
 * `npm run docs`: writes the API reference (see reference.ts) into docs/api/, replacing what was there.
 */
import { join } from 'node:path';
import { convert, OUT_DIR, ROOT, render } from './reference.ts';

const t0 = performance.now();
await render(await convert(), join(ROOT, OUT_DIR));
process.stdout.write(`wrote ${OUT_DIR}/ in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
