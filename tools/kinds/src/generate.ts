/**
 * @module tools/kinds/generate
 * The kinds generator: from the OpenAPI v3 documents of the stable group versions (`GROUP_VERSIONS`) to the files of
 * packages/runtime/src/client/kinds/ — one per API package (`core.ts`, `apps.ts`, …, `meta.ts` for apimachinery's meta/v1),
 * holding every selected kind, its `Kind` constant, and every definition its fields reach — and the entry `index.ts`,
 * which lists every name it exports.
 *
 * Guarantees: a pure function of the documents and the version (no clock, no file system): the same documents give the
 * same bytes, which is what the check of the committed output (tools/kinds/test) relies on.
 */
import { asciiSource, type Definition, type EmitContext, emitFile, emitIndex, type FileExports } from './emit.ts';
import { ENTRY_DOC } from './entry.ts';
import { assignNames, placeOf, resourceConstName } from './names.ts';
import { KindsGenError, type OpenApiDocuments, type Schema } from './openapi.ts';
import { emitSchemaFiles, type SchemaFiles } from './schema-files.ts';
import { GROUP_VERSIONS, type GroupVersion, type SelectedKind, selectKinds } from './select.ts';
import { isInline, refId } from './types.ts';

/** The generated files: base name (`core.ts`) → content. */
export type GeneratedFiles = ReadonlyMap<string, string>;

/** Every `$ref` under `schema`. */
function refsOf(schema: Schema, out: string[] = []): string[] {
  if (schema.$ref) out.push(refId(schema.$ref));
  for (const s of schema.allOf ?? []) refsOf(s, out);
  for (const s of schema.oneOf ?? []) refsOf(s, out);
  if (schema.items) refsOf(schema.items, out);
  if (typeof schema.additionalProperties === 'object') refsOf(schema.additionalProperties, out);
  for (const s of Object.values(schema.properties ?? {})) refsOf(s, out);
  return out;
}

/** The definitions reachable from `roots`, without the ones written inline. */
function reachable(roots: readonly string[], schemas: ReadonlyMap<string, Schema>): string[] {
  const seen = new Set<string>();
  const pending = [...roots];
  for (let id = pending.pop(); id !== undefined; id = pending.pop()) {
    if (seen.has(id)) continue;
    seen.add(id);
    const schema = schemas.get(id);
    if (!schema) throw new KindsGenError(`definition ${id} is referenced but no document has it`);
    pending.push(...refsOf(schema));
  }
  // JSONSchemaPropsOrArray and its kin are inline unions of JSONSchemaProps, which stays reachable through them.
  return [...seen].filter((id) => !isInline(id) && schemas.get(id)?.type !== undefined);
}

/** The summary line of a generated file's module comment. */
function summaryOf(file: string, gvs: readonly GroupVersion[]): string {
  if (file === 'meta')
    return "The types of apimachinery's meta/v1 that objects embed: `ObjectMeta`, `OwnerReference`, `LabelSelector`, `Condition`, ….";
  const names = gvs
    .filter((gv) => gv.file === file)
    .map((gv) => (gv.group === '' ? 'the core group (`v1`)' : `\`${gv.group}/${gv.version}\``));
  return `The kinds of ${names.join(' and ')} and the types of their fields, in their JSON form.`;
}

/** The generated kinds files of `docs` (keyed by discovery path) for Kubernetes `version`. */
export function generate(
  docs: OpenApiDocuments,
  version: string,
  gvs: readonly GroupVersion[] = GROUP_VERSIONS,
): GeneratedFiles {
  return generateAll(docs, version, gvs).kinds;
}

/** The generated kinds files and schema files (tools/kinds/schema-files) of `docs` for Kubernetes `version`. */
export function generateAll(
  docs: OpenApiDocuments,
  version: string,
  gvs: readonly GroupVersion[] = GROUP_VERSIONS,
): { readonly kinds: GeneratedFiles; readonly schemas: SchemaFiles } {
  const schemas = new Map<string, Schema>();
  for (const doc of docs.values())
    for (const [id, s] of Object.entries(doc.components?.schemas ?? {})) if (!schemas.has(id)) schemas.set(id, s);
  const kinds = selectKinds(docs, gvs);
  const kindOf = new Map<string, SelectedKind>(kinds.map((k) => [k.definition, k]));
  const ids = reachable(
    kinds.map((k) => k.definition),
    schemas,
  );
  const names = assignNames(ids, new Set(kindOf.keys()));
  const definitions = new Map<string, Definition & { file: string }>();
  for (const id of ids) {
    const kind = kindOf.get(id);
    const def = { id, name: names.get(id) as string, schema: schemas.get(id) as Schema, file: placeOf(id).file };
    definitions.set(id, kind ? { ...def, kind } : def);
  }
  const constants = new Map<string, string>();
  for (const k of kinds) {
    if (k.resource)
      constants.set(k.definition, resourceConstName(names.get(k.definition) as string, k.gvk.kind, k.resource.plural));
  }
  const ctx: EmitContext = { version, definitions, constants };
  const byFile = new Map<string, Definition[]>();
  for (const def of definitions.values()) byFile.set(def.file, [...(byFile.get(def.file) ?? []), def]);
  const files = new Map<string, string>();
  const exports = new Map<string, FileExports>();
  for (const file of [...byFile.keys()].sort()) {
    const defs = byFile.get(file) ?? [];
    files.set(`${file}.ts`, emitFile(file, summaryOf(file, gvs), defs, ctx));
    const sorted = (names: string[]) => names.sort((a, b) => (a < b ? -1 : 1));
    exports.set(`${file}.ts`, {
      types: sorted(defs.map((d) => d.name)),
      values: sorted(defs.flatMap((d) => constants.get(d.id) ?? [])),
    });
  }
  files.set('index.ts', emitIndex(version, ENTRY_DOC, exports));
  const schemaFiles = emitSchemaFiles(ctx);
  // the schemas are loaded by operators that embed them: ASCII, so V8 keeps them at a byte a character (the kinds'
  // typographic punctuation is in their doc comments, which a bundle drops)
  return { kinds: files, schemas: { ...schemaFiles, files: ascii(schemaFiles.files) } };
}

/** Every file of `files` in ASCII (`asciiSource`). */
function ascii(files: ReadonlyMap<string, string>): Map<string, string> {
  return new Map([...files].map(([name, text]) => [name, asciiSource(text)]));
}
