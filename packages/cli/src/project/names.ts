/**
 * @module project/names
 * Input rules for what users name: projects, kinds, groups, versions, domains, namespaces, images, bundle versions.
 * Each check throws a `CliError('Usage')` that names the value, the rule and an example.
 */
import type { KubeObject } from '@opkit/runtime';
import { CliError } from '../errors.ts';

const rule = (what: string, value: string, must: string, example: string) =>
  new CliError('Usage', `${what} "${value}" ${must} (e.g. ${example})`);

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** Kubernetes' longest DNS label (names of Namespaces and Services, label values). */
export const MAX_LABEL = 63;
/** The suffix of the metrics Service's name, `<project>-metrics`: the longest name derived from the project name. */
export const METRICS_SUFFIX = '-metrics';
/** The default namespace, `<project>-system`. */
export const NAMESPACE_SUFFIX = '-system';

/**
 * A project name: the npm package, and the name of the Deployment, ServiceAccount and RBAC objects, so a DNS-1123
 * label; also the stem of the metrics Service (`<name>-metrics`), whose name must start with a letter (Service names
 * are RFC 1035 labels) and fit in 63 characters.
 */
export function checkProjectName(name: string): string {
  if (!DNS_LABEL.test(name)) {
    throw rule(
      'project name',
      name,
      'must be lower-case letters, digits and "-", starting and ending alphanumeric',
      'appservice-operator',
    );
  }
  if (!/^[a-z]/.test(name)) {
    throw new CliError(
      'Usage',
      `project name "${name}" must start with a letter: the metrics Service is named ${name}${METRICS_SUFFIX}, and ` +
        'Service names must start with a letter (e.g. op-' +
        name +
        ')',
    );
  }
  const max = MAX_LABEL - METRICS_SUFFIX.length;
  if (name.length > max) {
    throw new CliError(
      'Usage',
      `project name "${name}" is ${name.length} characters; at most ${max} fit: the metrics Service ` +
        `${name}${METRICS_SUFFIX} would be ${name.length + METRICS_SUFFIX.length}, over Kubernetes' limit of ` +
        `${MAX_LABEL} for a Service name`,
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

/** `--group`, `--version` and `--kind` of an `opkit create` command: each required (else `help` is shown), each checked. */
export function checkGroupVersionKind(
  flags: {
    readonly group?: string | undefined;
    readonly version?: string | undefined;
    readonly kind?: string | undefined;
  },
  help: string,
): { group: string; version: string; kind: string } {
  const { group, version, kind } = flags;
  if (!group) throw new CliError('Usage', `--group is required\n${help}`);
  if (!version) throw new CliError('Usage', `--version is required\n${help}`);
  if (!kind) throw new CliError('Usage', `--kind is required\n${help}`);
  return { group: checkGroup(group), version: checkVersion(version), kind: checkKind(kind) };
}

export function checkNamespace(ns: string): string {
  if (!DNS_LABEL.test(ns) || ns.length > MAX_LABEL) {
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

/**
 * Semantic version X.Y.Z[-prerelease] (OLM bundles). It is part of the ClusterServiceVersion's name
 * (`<project>.v<version>`), a lower-case DNS name, so upper-case letters and empty pre-release parts are refused.
 */
export function checkSemver(version: string): string {
  const id = '(0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)';
  if (!new RegExp(`^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(-${id}(\\.${id})*)?$`).test(version)) {
    throw rule(
      'bundle version',
      version,
      'must be a semantic version X.Y.Z or X.Y.Z-PRERELEASE',
      '0.1.0 or 1.0.0-rc.1',
    );
  }
  if (version !== version.toLowerCase()) {
    throw rule(
      'bundle version',
      version,
      'must be lower-case: it is part of the ClusterServiceVersion name, and Kubernetes names are lower-case',
      version.toLowerCase(),
    );
  }
  if (/-$|-\.|\.-/.test(version)) {
    throw rule('bundle version', version, 'must not end a pre-release part with "-"', '1.0.0-rc.1');
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

/**
 * The name of a kind's constant, its plural with the kind's capitals: AppService → AppServices, Batch → Batches,
 * Policy → Policies (as `@opkit/runtime/kinds` names the built-in kinds' constants).
 */
export function kindsName(kind: string): string {
  const p = plural(kind);
  let same = 0;
  while (same < kind.length && p[same] === kind[same]?.toLowerCase()) same++;
  return kind.slice(0, same) + p.slice(same);
}

/** AppService → appService (identifiers). */
export function camel(kind: string): string {
  return kind.charAt(0).toLowerCase() + kind.slice(1);
}

/**
 * What the API server would refuse among the names of objects to apply: a Namespace's or Service's name that is not a
 * DNS label (a Service's must also start with a letter), any other name or namespace that is not a DNS-1123 name, a
 * label value longer than 63 characters. One line per problem, naming the object.
 */
export function nameProblems(objects: readonly KubeObject[]): string[] {
  const subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
  const problems: string[] = [];
  for (const o of objects) {
    const name = o.metadata.name ?? '';
    const id = `${o.kind ?? 'object'} ${name}`;
    if (o.kind === 'Service' && (!/^[a-z]/.test(name) || !DNS_LABEL.test(name) || name.length > MAX_LABEL)) {
      problems.push(
        `${id}: a Service name must be a DNS label of at most ${MAX_LABEL} characters starting with a letter`,
      );
    } else if (o.kind === 'Namespace' && (!DNS_LABEL.test(name) || name.length > MAX_LABEL)) {
      problems.push(`${id}: a Namespace name must be a DNS label of at most ${MAX_LABEL} characters`);
    } else if (!subdomain.test(name) || name.length > 253) {
      problems.push(`${id}: the name must be a DNS-1123 subdomain of at most 253 characters`);
    }
    const ns = o.metadata.namespace;
    if (ns !== undefined && (!DNS_LABEL.test(ns) || ns.length > MAX_LABEL)) {
      problems.push(`${id}: namespace "${ns}" must be a DNS label of at most ${MAX_LABEL} characters`);
    }
    for (const [key, value] of Object.entries(o.metadata.labels ?? {})) {
      if (value.length > MAX_LABEL) {
        problems.push(`${id}: the value of label ${key} is longer than ${MAX_LABEL} characters`);
      }
    }
  }
  return problems;
}
