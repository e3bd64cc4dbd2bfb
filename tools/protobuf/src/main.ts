/**
 * @module tools/protobuf/main
 * `npm run protobuf`: regenerates the runtime's protobuf decoders (packages/runtime/src/client/protobuf/messages/
 * and kinds.ts) from tools/protobuf/data/descriptor.json. With `--describe` it first rewrites the descriptor and the
 * differential test's fixtures from the Go types (needs Go: `go run` in tools/protobuf/go, whose go.mod pins
 * k8s.io/api and k8s.io/apimachinery at the Kubernetes version testenv runs).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Descriptor, emit } from './emit.ts';

const here = dirname(fileURLToPath(import.meta.url));
export const DATA = join(here, '..', 'data');
export const OUT = join(here, '..', '..', '..', 'packages', 'runtime', 'src', 'client', 'protobuf');

export function readDescriptor(): Descriptor {
  return JSON.parse(readFileSync(join(DATA, 'descriptor.json'), 'utf8')) as Descriptor;
}

function main(): void {
  if (process.argv.includes('--describe')) {
    execFileSync(
      'go',
      ['run', '.', '-out', join(DATA, 'descriptor.json'), '-fixtures', join(DATA, 'fixtures.jsonl.gz')],
      { cwd: join(here, '..', 'go'), stdio: 'inherit' },
    );
  }
  const files = emit(readDescriptor());
  rmSync(join(OUT, 'messages'), { recursive: true, force: true });
  for (const [path, text] of files) {
    mkdirSync(dirname(join(OUT, path)), { recursive: true });
    writeFileSync(join(OUT, path), text);
  }
  process.stdout.write(`protobuf: wrote ${files.size} files under ${OUT}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
