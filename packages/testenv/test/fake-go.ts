/**
 * @module fake-go
 * A stand-in `go` for tests of the build path: it "builds" a component by writing a small executable and logs each
 * built path, answers `go env GOVERSION`, `go mod download -json` and `go list -deps` (three packages).
 */
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A stand-in `go` that "builds" a component by writing a small executable, and logs each built path. */
export async function fakeGo(root: string): Promise<{ go: string; built: () => Promise<string[]> }> {
  const go = join(root, 'fake-go');
  const log = join(root, 'built.log');
  await writeFile(join(root, 'go.mod'), 'module k8s.io/kubernetes\n');
  await writeFile(
    go,
    [
      '#!/bin/sh',
      'case "$1" in',
      '  env) echo go1.26.0 ;;',
      `  mod) printf '{"GoMod":"%s","Dir":"%s"}\\n' "${join(root, 'go.mod')}" "${root}" ;;`,
      '  get) ;;',
      '  list) printf "internal/a\\ninternal/b\\nexample.com/cmd\\n" ;;',
      '  build) echo internal/a >&2; echo internal/b >&2; while [ "$1" != "-o" ]; do shift; done; printf "#!/bin/sh\\n# rebuilt\\n" > "$2"; chmod +x "$2";',
      `         echo "$2" >> "${log}" ;;`,
      'esac',
      '',
    ].join('\n'),
  );
  await chmod(go, 0o755);
  return {
    go,
    built: async () =>
      (await readFile(log, 'utf8').catch(() => ''))
        .split('\n')
        .filter(Boolean)
        .map((p) => p.replace(/^.*\//, '').replace(/\.partial-\d+$/, '')),
  };
}
