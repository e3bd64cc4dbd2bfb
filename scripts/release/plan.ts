/**
 * @module release/plan
 * The pure half of `npm run release`: which packages are published and in what order, the manifest each is
 * published with, and the checks on what `npm pack` would ship. No I/O here, so every rule has a fast test.
 *
 * Guarantees: the order puts every package after the packages it depends on; a published manifest names one version
 * for every package of ours, points only into `dist/` (the workspace-only `@opkit/source` condition, `scripts` and
 * `devDependencies` are dropped), and a tarball passes only if it holds the files its manifest points at and nothing
 * outside package.json, README/LICENSE and `dist/` (no tests, no TypeScript sources but `.d.ts`). The package table
 * (`--markdown`, pasted into docs/releasing.md) is rendered here from the plan and `npm pack`'s measurements, and read
 * back here, so a test can hold the committed table to what the plan says now.
 */

export type ReleaseErrorCode =
  | 'Usage'
  | 'DirtyTree'
  | 'VersionMismatch'
  | 'AlreadyPublished'
  | 'RegistryUnreachable'
  | 'NotLoggedIn'
  | 'CheckFailed'
  | 'PublishFailed';

export class ReleaseError extends Error {
  override readonly name = 'ReleaseError';
  readonly code: ReleaseErrorCode;
  constructor(code: ReleaseErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** The workspace-only export condition that runs a package from its sources. */
export const SOURCE_CONDITION = '@opkit/source';

export interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly private?: boolean;
  readonly exports?: Readonly<Record<string, unknown>>;
  readonly bin?: Readonly<Record<string, string>>;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly devDependencies?: Readonly<Record<string, string>>;
  readonly scripts?: Readonly<Record<string, string>>;
  readonly [field: string]: unknown;
}

export interface Workspace {
  readonly dir: string;
  readonly manifest: Manifest;
}

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

export function checkVersion(version: string): string {
  if (!SEMVER.test(version))
    throw new ReleaseError('Usage', `--version "${version}" is not a version X.Y.Z (or X.Y.Z-pre.N): pass one`);
  return version;
}

/** What `git status --porcelain` output says is in the way of a release (undefined for a clean tree). */
export function dirtyTreeProblem(porcelain: string): string | undefined {
  const changed = porcelain.split('\n').filter((l) => l.trim().length > 0);
  if (changed.length === 0) return undefined;
  return `the working tree has ${changed.length} uncommitted change(s) (first: ${changed[0]?.slice(3)}): commit or stash them, then release; nothing was published`;
}

/** The publishable workspaces (not `private`), each after the ones it depends on. */
export function releaseOrder(workspaces: readonly Workspace[]): Workspace[] {
  const publishable = workspaces.filter((w) => w.manifest.private !== true);
  const names = new Set(publishable.map((w) => w.manifest.name));
  const done = new Set<string>();
  const order: Workspace[] = [];
  const visit = (w: Workspace, path: readonly string[]): void => {
    if (done.has(w.manifest.name)) return;
    if (path.includes(w.manifest.name))
      throw new ReleaseError(
        'CheckFailed',
        `the packages depend on each other in a cycle: ${[...path, w.manifest.name].join(' → ')}`,
      );
    for (const dep of Object.keys(w.manifest.dependencies ?? {})) {
      const target = publishable.find((p) => p.manifest.name === dep);
      if (target) visit(target, [...path, w.manifest.name]);
      else if (dep.startsWith('@opkit/') && !names.has(dep))
        throw new ReleaseError('CheckFailed', `${w.manifest.name} depends on ${dep}, which is not a published package`);
    }
    done.add(w.manifest.name);
    order.push(w);
  };
  for (const w of publishable) visit(w, []);
  return order;
}

/** The version every package has in the repository; they must agree when --version is not given. */
export function commonVersion(workspaces: readonly Workspace[]): string {
  const versions = new Set(workspaces.map((w) => w.manifest.version));
  if (versions.size !== 1)
    throw new ReleaseError(
      'VersionMismatch',
      `the packages have different versions (${workspaces.map((w) => `${w.manifest.name}@${w.manifest.version}`).join(', ')}): pass --version X.Y.Z`,
    );
  return [...versions][0] as string;
}

function withoutSourceCondition(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== SOURCE_CONDITION)
      .map(([key, v]) => [key, withoutSourceCondition(v)]),
  );
}

/** The manifest a package is published with: one `version` for it and for every dependency on our packages. */
export function publishedManifest(manifest: Manifest, version: string, ours: ReadonlySet<string>): Manifest {
  const { scripts: _scripts, devDependencies: _dev, ...rest } = manifest;
  const dependencies = manifest.dependencies
    ? Object.fromEntries(Object.entries(manifest.dependencies).map(([n, r]) => [n, ours.has(n) ? version : r]))
    : undefined;
  return {
    ...rest,
    version,
    ...(manifest.exports ? { exports: withoutSourceCondition(manifest.exports) as Record<string, unknown> } : {}),
    ...(dependencies ? { dependencies } : {}),
  };
}

/** Every file the manifest points at (`exports` targets, `bin`), relative to the package, without `./`. */
export function entryFiles(manifest: Manifest): string[] {
  const files = new Set<string>();
  const walk = (value: unknown): void => {
    if (typeof value === 'string') files.add(value.replace(/^\.\//, ''));
    else if (typeof value === 'object' && value !== null) for (const v of Object.values(value)) walk(v);
  };
  walk(manifest.exports);
  walk(manifest.bin);
  return [...files].sort();
}

const SHIPS = /^(package\.json|README(\.md)?|LICENSE(\.md|\.txt)?|dist\/.+)$/i;

/** What is wrong with the files `npm pack` would ship for `manifest` (empty when nothing is). */
export function contentProblems(manifest: Manifest, files: readonly string[]): string[] {
  const problems: string[] = [];
  const shipped = new Set(files);
  for (const f of entryFiles(manifest))
    if (!shipped.has(f)) problems.push(`${f} (named in package.json) is not in the tarball`);
  for (const f of files) {
    if (!SHIPS.test(f)) problems.push(`${f} should not ship (only package.json, README, LICENSE and dist/)`);
    else if (/\.test\.|(?<!\.d)\.ts$/.test(f)) problems.push(`${f} should not ship (a test or a TypeScript source)`);
  }
  return problems;
}

/** What the package table says of a package that the plan decides (the rest, `PackedCells`, `npm pack` measures). */
export interface PlannedPackage {
  /** `name@version`, as published. */
  readonly id: string;
  /** Our packages it depends on (each at the same version). */
  readonly dependsOn: readonly string[];
  /** The commands it installs (`bin`). */
  readonly bins: readonly string[];
  /** Its public entry points: the `exports` subpaths (`.`, `./client`, …). */
  readonly exports: readonly string[];
}

/** A package as the table shows it, published at `version` among `ours`. */
export function plannedPackage(manifest: Manifest, version: string, ours: ReadonlySet<string>): PlannedPackage {
  const published = publishedManifest(manifest, version, ours);
  return {
    id: `${published.name}@${version}`,
    dependsOn: Object.keys(published.dependencies ?? {}).filter((d) => ours.has(d)),
    bins: Object.keys(published.bin ?? {}),
    exports: Object.keys(published.exports ?? {}),
  };
}

/** The published packages in release order (`releaseOrder`), as the table shows them. */
export function plannedPackages(order: readonly Workspace[], version: string): PlannedPackage[] {
  const ours = new Set(order.map((w) => w.manifest.name));
  return order.map((w) => plannedPackage(w.manifest, version, ours));
}

/** What `npm pack` measured of a tarball, as the table shows it. */
export interface PackedCells {
  readonly files: string;
  readonly packed: string;
  readonly unpacked: string;
}

export const kB = (bytes: number): string => `${(bytes / 1024).toFixed(1)} kB`;

export function packedCells(p: {
  readonly files: number;
  readonly size: number;
  readonly unpackedSize: number;
}): PackedCells {
  return { files: String(p.files), packed: kB(p.size), unpacked: kB(p.unpackedSize) };
}

const COLUMNS = [
  { title: 'package', right: false },
  { title: 'depends on', right: false },
  { title: 'bin', right: false },
  { title: 'exports', right: false },
  { title: 'files', right: true },
  { title: 'packed', right: true },
  { title: 'unpacked', right: true },
] as const;

const code = (names: readonly string[]): string => (names.length > 0 ? names.map((n) => `\`${n}\``).join(', ') : '—');

/** The package table (Markdown, columns aligned), one row per package in release order. */
export function packageTable(rows: readonly (PlannedPackage & PackedCells)[]): string {
  const cells = [
    COLUMNS.map((c) => c.title),
    ...rows.map((r) => [
      `\`${r.id}\``,
      code(r.dependsOn),
      code(r.bins),
      code(r.exports),
      r.files,
      r.packed,
      r.unpacked,
    ]),
  ];
  const widths = COLUMNS.map((_, i) => Math.max(3, ...cells.map((row) => (row[i] as string).length)));
  const line = (row: readonly string[]) =>
    `| ${row.map((cell, i) => (COLUMNS[i]?.right ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0))).join(' | ')} |`;
  const rule = `| ${widths.map((w, i) => (COLUMNS[i]?.right ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`;
  const [header, ...body] = cells;
  return [line(header ?? []), rule, ...body.map(line)].join('\n');
}

/** The measured cells of each row of a package table, by package (`name@version`); rows it cannot read are left out. */
export function readPackageTable(table: string): Map<string, PackedCells> {
  const rows = table
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .map((l) =>
      l
        .slice(1, l.trimEnd().endsWith('|') ? l.trimEnd().length - 1 : undefined)
        .split('|')
        .map((c) => c.trim()),
    );
  const header = rows[0] ?? [];
  const at = (title: string) => header.indexOf(title);
  const measured = new Map<string, PackedCells>();
  for (const row of rows.slice(2)) {
    const [id, files, packed, unpacked] = [at('package'), at('files'), at('packed'), at('unpacked')].map((i) =>
      i < 0 ? undefined : row[i],
    );
    if (id && files && packed && unpacked) measured.set(id.replace(/^`|`$/g, ''), { files, packed, unpacked });
  }
  return measured;
}
