/**
 * @module crd/check
 * The checks of a kind's definition that need no schema: group, version, kind, plural, singular, list kind, short
 * names, categories, scope, description, `maxDescLen` and printer columns, with the defaults filled in (`singular`, `listKind`,
 * `scope`).
 *
 * Guarantees: a definition that passes has names the apiserver accepts (DNS labels and subdomains, UpperCamelCase
 * kinds, a Kubernetes version); each failure is a `CrdSchemaError` whose `path` names the field at fault and whose
 * message says what it must look like.
 */
import type { TSchema } from '@sinclair/typebox';
import type { KindDefinition, PrinterColumn } from './kind.ts';
import { CrdSchemaError } from './schema.ts';

const DNS_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN_WITH_DOT = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/;
const KUBE_VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;
const UPPER_CAMEL = /^[A-Z][A-Za-z0-9]*$/;
const COLUMN_TYPES: ReadonlySet<string> = new Set(['integer', 'number', 'string', 'boolean', 'date']);

/** Validates the names and fills in the defaults. */
export function normalize<Spec extends TSchema, Status extends TSchema>(
  def: KindDefinition<Spec, Status>,
): KindDefinition<Spec, Status> {
  if (typeof def.group !== 'string' || def.group.length > 253 || !DNS_SUBDOMAIN_WITH_DOT.test(def.group)) {
    invalid(
      'group',
      `${show(def.group)} must be a lower-case DNS subdomain with at least one dot, e.g. app.example.com`,
    );
  }
  if (typeof def.version !== 'string' || !KUBE_VERSION.test(def.version)) {
    invalid('version', `${show(def.version)} must look like v1, v1alpha1 or v2beta3`);
  }
  if (typeof def.kind !== 'string' || !UPPER_CAMEL.test(def.kind) || def.kind.length > 63) {
    invalid('kind', `${show(def.kind)} must be UpperCamelCase, e.g. AppService`);
  }
  dnsLabel(def.plural, 'plural');
  const singular = def.singular ?? def.kind.toLowerCase();
  dnsLabel(singular, 'singular');
  if (singular === def.plural) invalid('singular', `${show(singular)} must differ from the plural`);
  const listKind = def.listKind ?? `${def.kind}List`;
  if (!UPPER_CAMEL.test(listKind) || listKind === def.kind) {
    invalid('listKind', `${show(listKind)} must be UpperCamelCase and differ from the kind`);
  }
  for (const [i, n] of (def.shortNames ?? []).entries()) dnsLabel(n, `shortNames[${i}]`);
  for (const [i, n] of (def.categories ?? []).entries()) dnsLabel(n, `categories[${i}]`);
  const scope = def.scope ?? 'Namespaced';
  if (scope !== 'Namespaced' && scope !== 'Cluster') invalid('scope', `${show(scope)} must be Namespaced or Cluster`);
  for (const [i, c] of (def.printerColumns ?? []).entries()) printerColumn(c, `printerColumns[${i}]`);
  if (def.description !== undefined && typeof def.description !== 'string') {
    invalid('description', 'must be a string');
  }
  if (def.maxDescLen !== undefined && (!Number.isInteger(def.maxDescLen) || def.maxDescLen < 0)) {
    invalid('maxDescLen', `${show(def.maxDescLen)} must be a non-negative integer (0 leaves the descriptions out)`);
  }
  return Object.freeze({ ...def, singular, listKind, scope });
}

function printerColumn(c: PrinterColumn, where: string): void {
  if (typeof c.name !== 'string' || c.name.trim() === '') invalid(`${where}.name`, 'must be a non-empty string');
  if (!COLUMN_TYPES.has(c.type)) {
    invalid(`${where}.type`, `${show(c.type)} must be one of ${[...COLUMN_TYPES].join(', ')}`);
  }
  if (typeof c.jsonPath !== 'string' || !c.jsonPath.startsWith('.')) {
    invalid(`${where}.jsonPath`, `${show(c.jsonPath)} must be a JSONPath starting with ".", e.g. .status.replicas`);
  }
  if (c.priority !== undefined && (!Number.isInteger(c.priority) || c.priority < 0)) {
    invalid(`${where}.priority`, 'must be a non-negative integer');
  }
}

function dnsLabel(value: unknown, where: string): void {
  if (typeof value !== 'string' || value.length > 63 || !DNS_LABEL.test(value)) {
    invalid(where, `${show(value)} must be a lower-case DNS label (a-z, 0-9, '-'; starting with a letter)`);
  }
}

/** A value as a message shows it. */
export function show(value: unknown): string {
  return value === undefined ? 'undefined' : JSON.stringify(value);
}

/** Throws the `CrdSchemaError` of the field `where`. */
export function invalid(where: string, message: string): never {
  throw new CrdSchemaError(where, message);
}
