/**
 * `prepack` of @opkit/testenv, after tsc: writes the offline validator that `@opkit/testenv/cel` loads into
 * `dist/validation/` (the compressed WebAssembly, Go's `wasm_exec.js`, the manifest), so a tarball from `npm pack` in
 * this package works without Go. Built with Go from `go-validation/` into the user cache on first use, taken from the
 * cache after that. `npm run release` stages the same files itself (scripts/release.ts).
 * Outside `src/`, so it is not compiled or published; run with `node --conditions=@opkit/source`.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeShippedValidation } from '../src/validation-wasm.ts';

const dest = join(fileURLToPath(new URL('..', import.meta.url)), 'dist', 'validation');
const manifest = await writeShippedValidation(dest, (line) => process.stderr.write(`${line}\n`));
process.stderr.write(
  `wrote the offline validator (Kubernetes ${manifest.kubernetesVersion}, ${manifest.goVersion}) to ${dest}\n`,
);
