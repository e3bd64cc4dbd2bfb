/**
 * @module tools/kinds/schema-files
 * The files of packages/runtime/src/client/schemas/: one per API package, as the kinds (`core.ts`, `apps.ts`, `meta.ts`,
 * …), each an entry of its own (`@opkit/runtime/schemas/core`), so an operator that embeds a pod template loads core's
 * and meta's schemas, not every group's. Each holds the `XSchema` constants of its package's types (tools/kinds/schemas
 * says what each is), every one after those it uses, and imports the constants of other packages it uses.
 *
 * Guarantees: the same definitions give the same bytes; a cycle between the files' imports throws (ES modules would
 * leave a constant undefined at the import).
 */

import { type Definition, type EmitContext, GENERATED_LINE } from './emit.ts';
import { KindsGenError } from './openapi.ts';
import { definitionNode, mapKeysOf, print, recursiveIds, type SchemaContext } from './schemas.ts';
import { docComment, escapeDoc, firstSentence } from './tsdoc.ts';

/** A schema file's base name → content, and the ids that got no schema (recursive). */
export interface SchemaFiles {
  readonly files: ReadonlyMap<string, string>;
  readonly recursive: readonly string[];
}

/** The schema files of the generated definitions of `ctx`. */
export function emitSchemaFiles(ctx: EmitContext): SchemaFiles {
  const recursive = recursiveIds(ctx.definitions);
  const emitted = new Set([...ctx.definitions.keys()].filter((id) => !recursive.has(id)));
  const mapKeys = mapKeysOf(ctx.definitions);
  const byFile = new Map<string, Definition[]>();
  for (const id of [...emitted].sort()) {
    const def = ctx.definitions.get(id) as Definition & { file: string };
    byFile.set(def.file, [...(byFile.get(def.file) ?? []), def]);
  }
  const files = new Map<string, string>();
  const imports = new Map<string, Set<string>>();
  for (const [file, defs] of [...byFile].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const { text, from } = emitFile(file, defs, { ctx, emitted, mapKeys });
    files.set(`${file}.ts`, text);
    imports.set(file, from);
  }
  checkAcyclic(imports);
  files.set('static.test.ts', emitStaticTest(byFile, headLines(ctx.version)));
  return { files, recursive: [...recursive].sort() };
}

/** The generated files' first lines. */
const headLines = (version: string): string[] => [
  GENERATED_LINE,
  `// from the OpenAPI v3 documents of Kubernetes ${version}: regenerate with \`npm run kinds\``,
];

/** The type-level test: `Static<typeof XSchema>` is exactly `X`, for every schema. */
function emitStaticTest(byFile: ReadonlyMap<string, readonly Definition[]>, head: string[]): string {
  const files = [...byFile.keys()].sort();
  const lines = [
    ...head,
    '// Static<typeof XSchema> is exactly X for every generated schema: a difference fails the type check (npm test).',
    "import { test } from 'node:test';",
    "import type { Static } from '@sinclair/typebox';",
    ...files.flatMap((f) => [
      `import type * as ${f}Kinds from '../kinds/${f}.ts';`,
      `import type * as ${f} from './${f}.ts';`,
    ]),
    '',
    'type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;',
    'type Same<A, B> = Equal<A, B> extends true ? true : never;',
    '',
    'export type Checked = [',
    ...files.flatMap((f) =>
      [...(byFile.get(f) ?? [])]
        .map((d) => d.name)
        .sort()
        .map((n) => `  Same<Static<typeof ${f}.${n}Schema>, ${f}Kinds.${n}>,`),
    ),
    '];',
    '',
    "test('Static<typeof XSchema> is X for every schema (checked by the type checker)', () => {});",
  ];
  return `${lines.join('\n')}\n`;
}

/** One file: its text and the files it imports constants from. */
function emitFile(
  file: string,
  defs: readonly Definition[],
  base: Omit<SchemaContext, 'use'>,
): { text: string; from: Set<string> } {
  const values = new Map<string, Set<string>>();
  const local = new Map<string, Set<string>>(); // id → the ids of this file it uses
  let current = '';
  const use = (id: string): string => {
    const def = base.ctx.definitions.get(id) as Definition & { file: string };
    const name = `${def.name}Schema`;
    if (def.file === file) local.get(current)?.add(id);
    else values.set(def.file, (values.get(def.file) ?? new Set()).add(name));
    return name;
  };
  const x: SchemaContext = { ...base, use };
  const code = new Map<string, string>();
  for (const def of defs) {
    current = def.id;
    local.set(def.id, new Set());
    code.set(def.id, print(definitionNode(def, x)));
  }
  const body = ordered(defs, local).map((def) => constant(def, code.get(def.id) ?? ''));
  const typeNames = defs.map((d) => d.name).sort();
  const head = [
    ...headLines(x.ctx.version),
    docComment(
      [
        `@module @opkit/runtime/schemas/${file}`,
        `The schemas of the types of \`@opkit/runtime/kinds\` that ${file === 'meta' ? "apimachinery's meta/v1 has" : `the ${file} API package has`}, to embed in a custom resource: \`XSchema\` for type \`X\`, structural as a CRD requires, with upstream's descriptions; \`Static<typeof XSchema>\` is \`X\`. docs/runtime.md ("Embedding built-in types") tells how.`,
      ],
      '',
    ),
    "import { Type } from '@sinclair/typebox';",
    `import type { ${typeNames.join(', ')} } from '../kinds/${file}.ts';`,
    ...[...values]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([from, names]) => `import { ${[...names].sort().join(', ')} } from './${from}.ts';`),
  ];
  return { text: `${head.join('\n')}\n\n${body.join('\n\n')}\n`, from: new Set(values.keys()) };
}

function constant(def: Definition, code: string): string {
  const what = def.schema.description ? ` ${escapeDoc(firstSentence(def.schema.description))}` : '';
  return `${docComment([`The schema of \`${def.name}\`.${what}`], '')}\nexport const ${def.name}Schema = Type.Unsafe<${def.name}>(${code});`;
}

/** `defs`, each after the ones of its file it uses (depth first, in name order otherwise). */
function ordered(defs: readonly Definition[], local: ReadonlyMap<string, ReadonlySet<string>>): Definition[] {
  const byId = new Map(defs.map((d) => [d.id, d]));
  const out: Definition[] = [];
  const seen = new Set<string>();
  const visit = (id: string) => {
    if (seen.has(id)) return;
    seen.add(id);
    for (const dep of [...(local.get(id) ?? [])].sort()) visit(dep);
    const def = byId.get(id);
    if (def) out.push(def);
  };
  for (const d of [...defs].sort((a, b) => (a.name < b.name ? -1 : 1))) visit(d.id);
  return out;
}

/** Throws when the files' imports of each other form a cycle. */
function checkAcyclic(imports: ReadonlyMap<string, ReadonlySet<string>>): void {
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open')
      throw new KindsGenError(`the schema files import each other in a cycle: ${[...path, file].join(' → ')}`);
    state.set(file, 'open');
    for (const next of imports.get(file) ?? []) visit(next, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of imports.keys()) visit(file, []);
}
