/**
 * @module tools/protobuf/bufbuild
 * The library column of the protobuf bench: a pod list decoded by `@bufbuild/protobuf` (reflection over a descriptor
 * set, no generated code), beside the runtime's generated decoders.
 *
 * `node tools/protobuf/src/bufbuild.ts` rewrites data/k8s-core-v1.binpb.gz: the descriptor set of core/v1 and the
 * apimachinery files it imports, compiled by buf from the `generated.proto` files of the k8s.io/api and
 * k8s.io/apimachinery versions tools/protobuf/go pins (Go's module cache; buf comes from the npm registry). The
 * committed file lets the bench run without Go.
 *
 * Guarantees: `bufbuildDecoder` decodes the same bytes the runtime's `decodeEnvelope` does (the `k8s\0` magic, then
 * runtime.Unknown, then the PodList in its `raw`), so the two columns time the same work up to the shape of the
 * result: the library gives protobuf messages (int64 as bigint, Time as seconds and nanos, Quantity and IntOrString
 * as messages), not the JSON the apiserver sends.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync, gzipSync } from 'node:zlib';
import { createFileRegistry, type DescMessage, fromBinary, type Message, toJson } from '@bufbuild/protobuf';
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';

const here = dirname(fileURLToPath(import.meta.url));
const SET = join(here, '..', 'data', 'k8s-core-v1.binpb.gz');
const BUF = '@bufbuild/buf@1.75.0';
/** The envelope's first four bytes, `k8s\0`. */
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);
/** The proto files compiled: core/v1 and, transitively, everything it imports. */
const FILES = [
  ['k8s.io/api', 'core/v1'],
  ['k8s.io/apimachinery', 'pkg/api/resource'],
  ['k8s.io/apimachinery', 'pkg/apis/meta/v1'],
  ['k8s.io/apimachinery', 'pkg/runtime'],
  ['k8s.io/apimachinery', 'pkg/runtime/schema'],
  ['k8s.io/apimachinery', 'pkg/util/intstr'],
] as const;

export interface BufbuildDecoder {
  /** The envelope and the object in it, decoded to messages. */
  decode(body: Uint8Array): Message;
  /** The same, then `toJson` (protobuf's JSON mapping, not the apiserver's). */
  decodeToJson(body: Uint8Array): unknown;
}

/**
 * Loads the committed descriptor set and returns the decoders of one message of core/v1 (its kind's name, as `Pod`
 * or `PodList`) as the apiserver sends it.
 */
export function bufbuildDecoder(kind: string): BufbuildDecoder {
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, gunzipSync(readFileSync(SET))));
  const message = (name: string): DescMessage => {
    const desc = registry.getMessage(name);
    if (!desc) throw new Error(`${SET} has no message ${name}: rewrite it with node tools/protobuf/src/bufbuild.ts`);
    return desc;
  };
  const unknown = message('k8s.io.apimachinery.pkg.runtime.Unknown');
  const target = message(`k8s.io.api.core.v1.${kind}`);
  const decode = (body: Uint8Array): Message => {
    if (Buffer.compare(Buffer.from(body.subarray(0, 4)), MAGIC) !== 0) throw new Error('not a k8s protobuf envelope');
    const envelope = fromBinary(unknown, body.subarray(4)) as Message & { raw?: Uint8Array };
    return fromBinary(target, envelope.raw ?? new Uint8Array());
  };
  return { decode, decodeToJson: (body) => toJson(target, decode(body)) };
}

/** Where Go's module cache holds `path` at the version tools/protobuf/go pins (downloaded first if need be). */
function moduleDir(path: string): string {
  const go = join(here, '..', 'go');
  execFileSync('go', ['mod', 'download', path], { cwd: go, stdio: 'inherit' });
  const dir = execFileSync('go', ['list', '-m', '-f', '{{.Dir}}', path], { cwd: go, encoding: 'utf8' }).trim();
  if (!dir) throw new Error(`go list found no source of ${path} for tools/protobuf/go: is it in its go.mod?`);
  return dir;
}

function main(): void {
  const work = mkdtempSync(join(tmpdir(), 'opkit-bufbuild-'));
  try {
    for (const [module, dir] of FILES) {
      const into = join(work, module, dir);
      mkdirSync(into, { recursive: true });
      copyFileSync(join(moduleDir(module), dir, 'generated.proto'), join(into, 'generated.proto'));
    }
    writeFileSync(join(work, 'buf.yaml'), 'version: v2\n');
    const out = join(work, 'set.binpb');
    execFileSync('npx', ['--yes', BUF, 'build', '--exclude-source-info', '-o', out], { cwd: work, stdio: 'inherit' });
    writeFileSync(SET, gzipSync(readFileSync(out), { level: 9 }));
    process.stdout.write(`bufbuild: wrote ${SET}\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
