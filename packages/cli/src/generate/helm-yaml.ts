/**
 * @module generate/helm-yaml
 * The structured writer of the chart's templates: an object (a Kubernetes manifest) in which some values are Helm
 * nodes, serialised as YAML template text.
 * - `helmExpr(action)`: a scalar that is the action `{{ action }}`;
 * - `helmText([...])`: a scalar made of literal text and actions (`wh.{{ .Release.Namespace }}.svc`);
 * - `helmBlock(pipeline)`: a mapping value rendered by Helm as YAML, on the lines below its key:
 *   `{{- pipeline | nindent N }}`, N the value's indentation;
 * - `helmIf(condition, value)`: a mapping entry or a sequence item rendered only when `condition` holds, between
 *   `{{- if condition }}` and `{{- end }}` lines at its indentation.
 * GUARANTEES: every value without a Helm node in it is written exactly as js-yaml (the dumper of the rest of opkit's
 * manifests) writes it, so an object without nodes gives the bytes of `doc(object)`, and the YAML around a node is
 * the same as around a plain value in its place. A `helmText` whose literal text would need quoting is written
 * double-quoted, with the actions inside the quotes. Helm output is never made by rewriting YAML text. Literal text
 * that holds `{{` (a CEL expression or a description may) is written as the action `{{ "{{" }}` there, so Helm renders
 * it as it was instead of reading an action in it.
 */
import yaml from 'js-yaml';

/** js-yaml's options for every manifest opkit writes (as `doc` in manifests.ts). */
const DUMP_OPTIONS = { noRefs: true, lineWidth: -1 };

/** A scalar that is one Helm action: `{{ action }}`. */
export class HelmExpr {
  /** The action's text, without the braces (`include "x.image" . | quote`). */
  readonly action: string;
  constructor(action: string) {
    this.action = action;
  }
}

/** A scalar made of literal text and Helm actions, in order. */
export class HelmText {
  /** The literal parts and the actions. */
  readonly parts: readonly (string | HelmExpr)[];
  constructor(parts: readonly (string | HelmExpr)[]) {
    this.parts = parts;
  }
}

/** A mapping value that Helm renders as YAML text: `{{- pipeline | nindent N }}` on the line below its key. */
export class HelmBlock {
  /** A pipeline whose output is the value's YAML at indentation 0 (`toYaml .Values.resources`). */
  readonly pipeline: string;
  constructor(pipeline: string) {
    this.pipeline = pipeline;
  }
}

/** A mapping entry (as the entry's value) or a sequence item rendered only when `condition` holds. */
export class HelmIf {
  /** The condition, as it goes after `if`. */
  readonly condition: string;
  /** The entry's value or the item, which may hold nodes itself. */
  readonly value: unknown;
  constructor(condition: string, value: unknown) {
    this.condition = condition;
    this.value = value;
  }
}

/** `{{ action }}` as a scalar. */
export const helmExpr = (action: string) => new HelmExpr(action);
/** A scalar of literal text and actions. */
export const helmText = (...parts: (string | HelmExpr)[]) => new HelmText(parts);
/** A mapping value Helm renders as YAML. */
export const helmBlock = (pipeline: string) => new HelmBlock(pipeline);
/** An entry's value or an item rendered only when `condition` holds. */
export const helmIf = (condition: string, value: unknown) => new HelmIf(condition, value);

/** A plain object (a YAML mapping), not an array, a node or another class's instance. */
export function isMapping(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

const isNode = (v: unknown) =>
  v instanceof HelmExpr || v instanceof HelmText || v instanceof HelmBlock || v instanceof HelmIf;

/** Whether a Helm node is anywhere in `value`. */
function hasNode(value: unknown): boolean {
  if (isNode(value)) return true;
  if (Array.isArray(value)) return value.some(hasNode);
  return isMapping(value) && Object.values(value).some(hasNode);
}

/** `text` (lines ending in `\n`) indented by `indent` spaces; empty lines stay empty, as js-yaml writes them. */
function indented(text: string, indent: number): string {
  const pad = ' '.repeat(indent);
  return literally(text)
    .split('\n')
    .map((line) => (line === '' ? line : pad + line))
    .join('\n');
}

/** The first line of `text` (indented by `indent + 2`) as a sequence item: its indentation ends in `- `. */
function asItem(text: string, indent: number): string {
  return `${' '.repeat(indent)}- ${text.slice(indent + 2)}`;
}

/** Literal text as Helm renders it back: each `{{` written as an action that outputs it. */
function literally(text: string): string {
  return text.replaceAll('{{', '{{ "{{" }}');
}

/** A key as js-yaml spells it in a block mapping (plain, or quoted when it must be). */
function keyText(key: string): string {
  const line = yaml.dump({ [key]: null }, DUMP_OPTIONS);
  return literally(line.slice(0, line.lastIndexOf(': null')));
}

/** A scalar node as YAML text. */
function scalarText(node: HelmExpr | HelmText): string {
  if (node instanceof HelmExpr) return `{{ ${node.action} }}`;
  // the literal text as it reads once each action is rendered (a namespace, a name: a DNS label)
  const sample = node.parts.map((p) => (typeof p === 'string' ? p : 'x')).join('');
  const plain = yaml.dump(sample, DUMP_OPTIONS) === `${sample}\n`;
  const literal = (s: string) => literally(plain ? s : JSON.stringify(s).slice(1, -1));
  const text = node.parts.map((p) => (typeof p === 'string' ? literal(p) : scalarText(p))).join('');
  return plain ? text : `"${text}"`;
}

/** `body` between `{{- if condition }}` and `{{- end }}` lines indented by `indent`. */
function guardedLines(condition: string, body: string, indent: number): string {
  const pad = ' '.repeat(indent);
  return `${pad}{{- if ${condition} }}\n${body}${pad}{{- end }}\n`;
}

/** One `key: value` entry of a mapping whose keys are indented by `indent`. */
function entryText(key: string, value: unknown, indent: number): string {
  if (value instanceof HelmIf) return guardedLines(value.condition, entryText(key, value.value, indent), indent);
  if (!hasNode(value)) return indented(yaml.dump({ [key]: value }, DUMP_OPTIONS), indent);
  const head = `${' '.repeat(indent)}${keyText(key)}:`;
  if (value instanceof HelmExpr || value instanceof HelmText) return `${head} ${scalarText(value)}\n`;
  if (value instanceof HelmBlock) return `${head}\n{{- ${value.pipeline} | nindent ${indent + 2} }}\n`;
  // js-yaml indents a sequence under its key, as a mapping
  return `${head}\n${Array.isArray(value) ? sequenceText(value, indent + 2) : mappingText(value, indent + 2)}`;
}

/** A mapping (a plain object) whose keys are indented by `indent`. */
function mappingText(value: unknown, indent: number): string {
  if (!isMapping(value)) return indented(yaml.dump(value, DUMP_OPTIONS), indent);
  return Object.entries(value)
    .map(([k, v]) => entryText(k, v, indent))
    .join('');
}

/** One item of a sequence whose dashes are indented by `indent`. */
function itemText(item: unknown, indent: number): string {
  if (item instanceof HelmIf) return guardedLines(item.condition, itemText(item.value, indent), indent);
  if (!hasNode(item)) return indented(yaml.dump([item], DUMP_OPTIONS), indent);
  const pad = ' '.repeat(indent);
  if (item instanceof HelmExpr || item instanceof HelmText) return `${pad}- ${scalarText(item)}\n`;
  if (item instanceof HelmBlock) return `${pad}-\n{{- ${item.pipeline} | nindent ${indent + 2} }}\n`;
  // js-yaml writes a nested mapping or sequence compactly: its first line on the dash's
  const body = Array.isArray(item) ? sequenceText(item, indent + 2) : mappingText(item, indent + 2);
  return asItem(body, indent);
}

/** A sequence whose dashes are indented by `indent`. */
function sequenceText(items: readonly unknown[], indent: number): string {
  return items.map((item) => itemText(item, indent)).join('');
}

/** One YAML document (a manifest that may hold Helm nodes) as template text, ending in a newline. */
export function templateDoc(obj: unknown): string {
  return mappingText(obj, 0);
}

/** The documents of a template file, separated by `---` lines. */
export function templateDocs(objs: readonly unknown[]): string {
  return objs.map(templateDoc).join('---\n');
}

/**
 * The documents rendered only when `condition` holds: between `{{- if condition }}` and `{{- end }}` lines, with a
 * `---` line first unless `separated` is false (for a file whose text before the `if` is no document).
 */
export function guardedDocs(condition: string, objs: readonly unknown[], separated = true): string {
  return `{{- if ${condition} }}\n${separated ? '---\n' : ''}${templateDocs(objs)}{{- end }}\n`;
}
