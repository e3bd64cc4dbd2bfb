/**
 * @module project/names
 * Input rules for what users name: projects, kinds, groups, versions, domains, namespaces, images, bundle versions.
 * Each check throws a `CliError('Usage')` that names the value, the rule and an example.
 */
import { CliError } from '../errors.ts';

const rule = (what: string, value: string, must: string, example: string) =>
  new CliError('Usage', `${what} "${value}" ${must} (e.g. ${example})`);

/** A project name: a DNS-1123 label (also the npm package and the operator's name). */
export function checkProjectName(name: string): string {
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name) || name.length > 63) {
    throw rule(
      'project name',
      name,
      'must be lower-case letters, digits and "-", at most 63, starting and ending alphanumeric',
      'appservice-operator',
    );
  }
  return name;
}

export function checkKind(kind: string): string {
  if (!/^[A-Z][a-zA-Z0-9]*$/.test(kind) || kind.length > 63) {
    throw rule('kind', kind, 'must be UpperCamelCase: a capital letter, then letters and digits', 'AppService');
  }
  return kind;
}

/** A DNS-1123 subdomain: lower-case labels separated by dots. */
export function checkDomain(what: string, value: string): string {
  const label = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
  if (!new RegExp(`^${label}(\\.${label})*$`).test(value) || value.length > 253) {
    throw rule(what, value, 'must be a DNS-1123 subdomain: lower-case letters, digits, "-" and "."', 'example.com');
  }
  return value;
}

export function checkGroup(group: string): string {
  return checkDomain('group', group);
}

export function checkVersion(version: string): string {
  if (!/^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/.test(version)) {
    throw rule('version', version, 'must look like v1, v1alpha1 or v2beta3', 'v1alpha1');
  }
  return version;
}

export function checkNamespace(ns: string): string {
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(ns) || ns.length > 63) {
    throw rule('namespace', ns, 'must be a DNS-1123 label', 'my-operator-system');
  }
  return ns;
}

export function checkImage(image: string): string {
  if (!/^[a-z0-9]+([._/:@-][a-zA-Z0-9_.-]+)*$/.test(image) || /\s/.test(image)) {
    throw rule('image', image, 'must be an image reference NAME[:TAG]', 'registry.example.com/team/op:0.1.0');
  }
  return image;
}

/** Semantic version X.Y.Z (OLM bundles). */
export function checkSemver(version: string): string {
  if (!/^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$/.test(version)) {
    throw rule('bundle version', version, 'must be a semantic version X.Y.Z', '0.1.0');
  }
  return version;
}

/** AppService → appservice (file names, plural stem). */
export function lower(kind: string): string {
  return kind.toLowerCase();
}

/** AppService → appservices; Policy → policies; Status → statuses. */
export function plural(kind: string): string {
  const l = lower(kind);
  if (/(s|x|z|ch|sh)$/.test(l)) return `${l}es`;
  if (/[^aeiou]y$/.test(l)) return `${l.slice(0, -1)}ies`;
  return `${l}s`;
}

/** AppService → appService (identifiers). */
export function camel(kind: string): string {
  return kind.charAt(0).toLowerCase() + kind.slice(1);
}
