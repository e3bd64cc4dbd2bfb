/**
 * @module commands/bundle
 * `opkit bundle --version X.Y.Z [--channels alpha,stable] [--default-channel C] [--image IMAGE] [--dir DIR]`: an OLM
 * bundle (registry+v1) under bundle/: `manifests/` with the ClusterServiceVersion (the Deployment and the generated
 * RBAC as its install strategy: ClusterRole rules as clusterPermissions, the namespace Role as permissions; owned CRDs;
 * install modes; the samples as alm-examples) and the CRDs, `metadata/annotations.yaml`, and `bundle.Dockerfile` whose
 * labels match the annotations. The fields OLM requires are checked before anything is written.
 * An existing CSV is merged, as operator-sdk does: opkit rewrites what it derives from the project (name, version,
 * install strategy, owned CRDs' names and kinds, alm-examples, containerImage) and keeps every other field as the user
 * edited it (description, icon, maintainers, links, keywords, install modes, descriptors, …).
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { KubeObject } from '@opkit/runtime';
import yaml from 'js-yaml';
import { CliError } from '../errors.ts';
import {
  crdObject,
  deploymentObject,
  doc,
  GENERATED,
  type LoadedApi,
  loadApis,
  rbacFor,
  sampleFile,
} from '../generate/manifests.ts';
import { checkImage, checkSemver } from '../project/names.ts';
import { apiGroup, type Project, readProject } from '../project/project.ts';
import { writeFiles } from '../scaffold/files.ts';

export const BUNDLE_HELP = `Usage: opkit bundle --version X.Y.Z [options]

Writes an OLM bundle (registry+v1) to bundle/ and bundle.Dockerfile.

Options:
  --version X.Y.Z          the bundle's semantic version (required)
  --channels LIST          comma-separated channels (default alpha)
  --default-channel NAME   one of the channels (default: the first)
  --image IMAGE            the operator image (default: the PROJECT's)
  --dir DIR                the project (default .)
`;

const MEDIA = {
  'operators.operatorframework.io.bundle.mediatype.v1': 'registry+v1',
  'operators.operatorframework.io.bundle.manifests.v1': 'manifests/',
  'operators.operatorframework.io.bundle.metadata.v1': 'metadata/',
} as const;

/** What a bundle is made for, beyond the project. */
export interface BundleOptions {
  readonly version: string;
  readonly channels: string[];
  readonly defaultChannel: string;
  readonly image: string;
}

/** The samples of the APIs (config/samples/), for the CSV's alm-examples; a sample that is missing is left out. */
async function readSamples(dir: string, apis: readonly LoadedApi[]): Promise<unknown[]> {
  const samples: unknown[] = [];
  for (const a of apis) {
    const text = await readFile(join(dir, sampleFile(a.entry)), 'utf8').catch(() => undefined);
    if (text) samples.push(yaml.load(text));
  }
  return samples;
}

/** The CSV's install strategy: the manager's Deployment, the ClusterRole's and the namespace Role's rules. */
function installStrategy(p: Project, apis: readonly LoadedApi[], image: string) {
  const r = rbacFor(p, apis);
  const deployment = deploymentObject(p, image) as KubeObject & { spec: unknown };
  return {
    strategy: 'deployment',
    spec: {
      deployments: [{ name: p.projectName, label: deployment.metadata.labels, spec: deployment.spec }],
      clusterPermissions: [{ serviceAccountName: p.projectName, rules: r.clusterRole.rules }],
      ...(r.role ? { permissions: [{ serviceAccountName: p.projectName, rules: r.role.rules }] } : {}),
    },
  };
}

/** The CSV's spec as opkit derives it from the project (before the merge with the existing CSV). */
function csvSpec(p: Project, apis: readonly LoadedApi[], opts: BundleOptions) {
  return {
    displayName: p.projectName,
    description: `${p.projectName} manages ${apis.map((a) => a.entry.kind).join(', ')} resources.`,
    version: opts.version,
    maturity: opts.defaultChannel,
    minKubeVersion: '1.29.0',
    provider: { name: p.domain },
    maintainers: [{ name: p.projectName, email: `maintainers@${p.domain}` }],
    keywords: [p.projectName, 'opkit'],
    links: [{ name: p.projectName, url: `https://${p.domain}` }],
    installModes: [
      { type: 'OwnNamespace', supported: false },
      { type: 'SingleNamespace', supported: false },
      { type: 'MultiNamespace', supported: false },
      { type: 'AllNamespaces', supported: true },
    ],
    customresourcedefinitions: {
      owned: apis.map((a) => ({
        name: `${a.entry.plural}.${apiGroup(p, a.entry)}`,
        version: a.entry.version,
        kind: a.entry.kind,
        displayName: a.entry.kind,
        description: `${a.entry.kind} (${apiGroup(p, a.entry)}/${a.entry.version})`,
      })),
    },
    install: installStrategy(p, apis, opts.image),
  };
}

/** The ClusterServiceVersion's name, which must fit 63 characters. */
function csvNameOf(p: Project, version: string): string {
  const csvName = `${p.projectName}.v${version}`;
  if (csvName.length > 63)
    throw new CliError(
      'Usage',
      `the ClusterServiceVersion name ${csvName} is longer than 63 characters: shorten the project name`,
    );
  return csvName;
}

/** The ClusterServiceVersion `csvName` as opkit derives it from the project. */
function csvObject(
  p: Project,
  apis: readonly LoadedApi[],
  opts: BundleOptions & { csvName: string },
  samples: readonly unknown[],
) {
  const { csvName } = opts;
  return {
    apiVersion: 'operators.coreos.com/v1alpha1',
    kind: 'ClusterServiceVersion',
    metadata: {
      name: csvName,
      // OLM sets the namespace when it installs the bundle; the CSV carries this conventional value until then
      namespace: 'placeholder',
      annotations: {
        'alm-examples': JSON.stringify(samples),
        capabilities: 'Basic Install',
        categories: 'Developer Tools',
        containerImage: opts.image,
        createdAt: '1970-01-01T00:00:00Z',
        'operators.operatorframework.io/builder': 'opkit',
        'operators.operatorframework.io/project_layout': 'opkit.dev/v1',
      },
    },
    spec: csvSpec(p, apis, opts),
  };
}

/** path → content of every file of the bundle (see the module comment); the existing CSV is merged. */
export async function bundleFiles(
  dir: string,
  p: Project,
  apis: readonly LoadedApi[],
  opts: BundleOptions,
): Promise<Map<string, string>> {
  const csvName = csvNameOf(p, opts.version);
  const csv = csvObject(p, apis, { ...opts, csvName }, await readSamples(dir, apis));
  const csvPath = `bundle/manifests/${p.projectName}.clusterserviceversion.yaml`;
  const merged = mergeCsv(csv, await readExistingCsv(join(dir, csvPath)));
  checkCsv(merged);
  const annotations = {
    ...MEDIA,
    'operators.operatorframework.io.bundle.package.v1': p.projectName,
    'operators.operatorframework.io.bundle.channels.v1': opts.channels.join(','),
    'operators.operatorframework.io.bundle.channel.default.v1': opts.defaultChannel,
  };
  const generated = GENERATED('the project by opkit bundle');
  const files = new Map<string, string>();
  files.set(csvPath, CSV_HEADER + doc(merged));
  for (const a of apis)
    files.set(`bundle/manifests/${apiGroup(p, a.entry)}_${a.entry.plural}.yaml`, generated + doc(crdObject(p, a)));
  files.set('bundle/metadata/annotations.yaml', generated + doc({ annotations }));
  const labels = Object.entries(annotations).map(([k, v]) => `LABEL ${k}=${v}`);
  files.set(
    'bundle.Dockerfile',
    `${generated}FROM scratch\n${labels.join('\n')}\nCOPY bundle/manifests /manifests/\nCOPY bundle/metadata /metadata/\n`,
  );
  return files;
}

const CSV_HEADER =
  '# generated by opkit bundle from the project: name, version, install strategy, owned CRDs and examples are ' +
  'rewritten on every run; your edits to the other fields (description, icon, maintainers, …) are kept\n';

type Doc = Record<string, unknown>;
const isDoc = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The CSV already in the bundle, when it is one opkit wrote (a file that is the user's is refused by writeFiles). */
async function readExistingCsv(path: string): Promise<Doc | undefined> {
  const text = await readFile(path, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = yaml.load(text);
  } catch (err) {
    throw new CliError(
      'Usage',
      `${path} is not valid YAML (${(err as Error).message.split('\n')[0]}): fix it, or move it away to start afresh`,
      { cause: err },
    );
  }
  if (!isDoc(parsed) || parsed.kind !== 'ClusterServiceVersion') {
    throw new CliError('Usage', `${path} is not a ClusterServiceVersion: fix it, or move it away to start afresh`);
  }
  return parsed;
}

/**
 * The generated CSV merged into the existing one: the existing fields win, except those opkit derives from the project
 * (metadata.name, spec.version, spec.install, the owned CRDs' name/version/kind and the alm-examples, containerImage,
 * builder and layout annotations). Owned CRDs keep the user's displayName, description and descriptors; CRDs the
 * project no longer has are dropped.
 */
export function mergeCsv<T extends { metadata: Doc; spec: Doc }>(generated: T, existing: Doc | undefined): T {
  if (!existing) return generated;
  const meta = isDoc(existing.metadata) ? existing.metadata : {};
  const spec = isDoc(existing.spec) ? existing.spec : {};
  const genAnnotations = (generated.metadata.annotations ?? {}) as Record<string, string>;
  const forced = [
    'alm-examples',
    'containerImage',
    'operators.operatorframework.io/builder',
    'operators.operatorframework.io/project_layout',
  ];
  const annotations: Record<string, unknown> = {
    ...genAnnotations,
    ...(isDoc(meta.annotations) ? meta.annotations : {}),
  };
  for (const k of forced) annotations[k] = genAnnotations[k];
  const genCrds = (generated.spec.customresourcedefinitions ?? {}) as { owned?: Doc[] };
  const oldCrds = isDoc(spec.customresourcedefinitions) ? spec.customresourcedefinitions : {};
  const oldOwned = Array.isArray(oldCrds.owned) ? oldCrds.owned.filter(isDoc) : [];
  const owned = (genCrds.owned ?? []).map((g) => {
    const old = oldOwned.find((o) => o.name === g.name && o.version === g.version);
    return old ? { ...g, ...old, name: g.name, version: g.version, kind: g.kind } : g;
  });
  return {
    ...generated,
    ...existing,
    metadata: { ...generated.metadata, ...meta, name: generated.metadata.name, annotations },
    spec: {
      ...generated.spec,
      ...spec,
      version: generated.spec.version,
      install: generated.spec.install,
      customresourcedefinitions: { ...oldCrds, ...genCrds, owned },
    },
  };
}

/** The fields OLM refuses a bundle without. */
export function checkCsv(csv: { metadata: { name: string }; spec: Record<string, unknown> }): void {
  const spec = csv.spec as {
    displayName?: string;
    version?: string;
    installModes?: { type: string; supported: boolean }[];
    install?: { strategy?: string; spec?: { deployments?: unknown[] } };
    customresourcedefinitions?: { owned?: { name: string; version: string; kind: string }[] };
  };
  const missing: string[] = [];
  if (!spec.displayName) missing.push('spec.displayName');
  if (!spec.version) missing.push('spec.version');
  if (!spec.installModes?.some((m) => m.supported)) missing.push('spec.installModes (one supported)');
  if (spec.install?.strategy !== 'deployment' || !spec.install.spec?.deployments?.length)
    missing.push('spec.install (deployment strategy)');
  for (const [i, o] of (spec.customresourcedefinitions?.owned ?? []).entries()) {
    if (!o.name || !o.version || !o.kind)
      missing.push(`spec.customresourcedefinitions.owned[${i}] (name, version, kind)`);
  }
  if (missing.length > 0)
    throw new CliError('Usage', `the ClusterServiceVersion ${csv.metadata.name} lacks ${missing.join(', ')}`);
}

export async function bundleCommand(argv: readonly string[], out: (line: string) => void): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      version: { type: 'string' },
      channels: { type: 'string', default: 'alpha' },
      'default-channel': { type: 'string' },
      image: { type: 'string' },
      dir: { type: 'string', default: '.' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    out(BUNDLE_HELP);
    return 0;
  }
  if (!values.version) throw new CliError('Usage', `--version is required (e.g. --version 0.1.0)\n${BUNDLE_HELP}`);
  const version = checkSemver(values.version);
  const channels = values.channels
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
  for (const c of channels)
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(c))
      throw new CliError('Usage', `channel "${c}" must be lower-case letters, digits, "-" and "."`);
  if (channels.length === 0) throw new CliError('Usage', '--channels needs at least one channel');
  const defaultChannel = values['default-channel'] ?? (channels[0] as string);
  if (!channels.includes(defaultChannel))
    throw new CliError('Usage', `--default-channel "${defaultChannel}" is not one of --channels ${channels.join(',')}`);
  const dir = resolve(values.dir);
  const project = await readProject(dir);
  const image = checkImage(values.image ?? project.image);
  const files = await bundleFiles(dir, project, await loadApis(dir, project), {
    version,
    channels,
    defaultChannel,
    image,
  });
  const result = await writeFiles(dir, files);
  for (const f of [...result.written, ...result.unchanged]) out(`bundle: ${f}`);
  return 0;
}
