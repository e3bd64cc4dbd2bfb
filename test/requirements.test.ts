/**
 * The requirements the docs state, checked against the code. README's "Requirements" section is the one place that
 * says what a machine needs; the other pages link to it. This check reads what the code pins — the component versions
 * and the oldest Go (packages/testenv/src/versions.ts), helm's version, the cold build's time (binaries.ts), whether
 * every component has a published digest on linux amd64/arm64 (release.ts), the packages' `engines.node`, the
 * repository's own Node (root `engines` and the `node` devDependency) — and fails, naming the file, the line and the
 * sentence, when a page:
 * - states a Go requirement outside README's Requirements section (and outside the packages' own READMEs, which npm
 *   shows on their own), or anywhere says that Go is needed on Linux without saying "from source" / "other
 *   platforms", or that kwok is built with Go or cannot be verified, while the code downloads every component there;
 * - states a version of Kubernetes, etcd, kwok, helm, Go or Node that the code does not pin or support;
 * - states a time for the Go build other than the code's own figure.
 * Pages read: README.md, docs/*.md (not the generated docs/api/), every package's README.md, and the README that
 * `opkit init` writes into a new project (its template in packages/cli/src/scaffold/templates.ts).
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { COLD_BUILD_TIME } from '../packages/testenv/src/binaries.ts';
import { HELM_VERSION } from '../packages/testenv/src/helm.ts';
import { releaseArtifact } from '../packages/testenv/src/release.ts';
import {
  COMPONENT_NAMES,
  ETCD_VERSION,
  GO_MINIMUM,
  KUBERNETES_VERSION,
  KWOK_VERSION,
} from '../packages/testenv/src/versions.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** What the code says, the facts every page is checked against. */
interface Facts {
  readonly kubernetes: string;
  readonly etcd: string;
  readonly kwok: string;
  readonly helm: string;
  readonly goMinimum: string;
  readonly coldBuild: string;
  /** Every component has a published digest on linux amd64 and arm64: there, nothing needs Go. */
  readonly linuxWithoutGo: boolean;
  /** The packages' `engines.node` minimum, e.g. [22, 18]. */
  readonly nodeMinimum: readonly [number, number];
  /** The repository's own Node: the root `engines` minimum, e.g. [24, 11]. */
  readonly repoNode: readonly [number, number];
}

async function json(path: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(join(ROOT, path), 'utf8')) as Record<string, unknown>;
}

/** `>=22.18` (or `>=24.11 <25`) → [22, 18]. */
function minimumOf(range: string, what: string): [number, number] {
  const m = /^>=(\d+)\.(\d+)/.exec(range) ?? assert.fail(`${what}: "${range}" is not ">=MAJOR.MINOR…"`);
  return [Number(m[1]), Number(m[2])];
}

async function facts(): Promise<Facts> {
  const engines = new Set<string>();
  for (const pkg of ['packages/testenv', 'packages/runtime', 'packages/cli', 'packages/create-opkit']) {
    const manifest = await json(`${pkg}/package.json`);
    engines.add(String((manifest.engines as Record<string, string> | undefined)?.node));
  }
  assert.equal(engines.size, 1, `the published packages disagree on engines.node: ${[...engines].join(', ')}`);
  const root = await json('package.json');
  const repoRange = String((root.engines as Record<string, string>).node);
  const repoNode = minimumOf(repoRange, 'the root engines.node');
  const devNode = /^\^?(\d+)\.(\d+)/.exec(String((root.devDependencies as Record<string, string>).node));
  assert.ok(devNode, 'the root package.json pins node as a devDependency');
  assert.ok(
    Number(devNode[1]) === repoNode[0] && Number(devNode[2]) >= repoNode[1],
    `the node devDependency ${devNode[0]} is outside the root engines ${repoRange}`,
  );
  const platforms = [
    { os: 'linux', arch: 'amd64' },
    { os: 'linux', arch: 'arm64' },
  ] as const;
  return {
    kubernetes: KUBERNETES_VERSION,
    etcd: ETCD_VERSION,
    kwok: KWOK_VERSION,
    helm: HELM_VERSION,
    goMinimum: GO_MINIMUM,
    coldBuild: COLD_BUILD_TIME,
    linuxWithoutGo: platforms.every((p) =>
      COMPONENT_NAMES.every((c) => {
        const a = releaseArtifact(c, p);
        return a.checksumUrl !== undefined || a.github !== undefined;
      }),
    ),
    nodeMinimum: minimumOf([...engines][0] ?? '', 'engines.node'),
    repoNode,
  };
}

/** One sentence (or table row, or code line) of a page, with where it starts. */
interface Unit {
  readonly file: string;
  readonly line: number;
  /** The heading it sits under (`## Requirements`). */
  readonly section: string;
  readonly text: string;
  /** The whole paragraph (or row, or line) the sentence is part of. */
  readonly block: string;
  readonly code: boolean;
}

/** A page's sentences, table rows and code lines, each with its line and section. */
function units(file: string, markdown: string): Unit[] {
  const out: Unit[] = [];
  const lines = markdown.split('\n');
  let section = '';
  let fenced = false;
  let block: { line: number; parts: string[] } | undefined;
  const flush = () => {
    if (!block) return;
    const text = block.parts.join(' ');
    for (const sentence of text.split(/(?<=[.!?;])\s+(?=[A-Z*`([])|(?<=:)\s+(?=[A-Z*`(])/))
      out.push({ file, line: block.line, section, text: sentence, block: text, code: false });
    block = undefined;
  };
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line.startsWith('```')) {
      flush();
      fenced = !fenced;
      return;
    }
    if (fenced) {
      if (line) out.push({ file, line: i + 1, section, text: line, block: line, code: true });
      return;
    }
    if (line.startsWith('#')) {
      flush();
      section = line;
      return;
    }
    if (!line || line.startsWith('|') || /^([-*]|\d+\.)\s/.test(line)) flush();
    if (!line) return;
    if (line.startsWith('|')) {
      out.push({ file, line: i + 1, section, text: line, block: line, code: false });
      return;
    }
    if (!block) block = { line: i + 1, parts: [] };
    block.parts.push(line);
  });
  flush();
  return out;
}

/** Says that Go is needed (or not) for something. */
const GO_REQUIREMENT =
  /\b(?:need|needs|needed|require|requires|required)\b[^.;]{0,60}\bGo\b|\bGo\b(?: ≥ [\d.]+)?[^.;]{0,30}\b(?:is|are|be)\s+(?:not\s+)?(?:needed|required)\b|\bGo\s*(?:≥|>=)\s*\d|\b[Nn]o Go\b|\bwithout Go\b|\bnothing needs Go\b/;
/** Limits a Go requirement to building from source, to other platforms, or to what could not be downloaded. */
const GO_QUALIFIED =
  /from source|--from-source|OPKIT_TESTENV_SOURCE=go|other platforms|macOS|Windows|could not be downloaded|\bonly\b/;
/** Says that kwok needs Go, is built with it, or cannot be verified. */
const KWOK_NEEDS_GO =
  /\bkwok\b[^.;]*\b(?:built|build|builds|needs?|requires?)\b[^.;]*\bGo\b|kwok publishes no checksums?, so|kwok[^.;]*cannot be (?:verified|downloaded)/i;
/** A time in minutes. */
const MINUTES = /(?:~|about\s+)?\d+(?:\s*(?:to|–|-)\s*\d+)?\s*(?:minutes|min)\b/;
/** A sentence about the Go build of the control-plane binaries (not helm's). */
const GO_BUILD = /\bcold build\b|\bGo build\b|\bbuil(?:d|ds|t)\b[^.;]*\b(?:from Go|with Go|binaries)\b/i;

/** Every way a unit contradicts `facts`, as reasons. */
function violations(unit: Unit, f: Facts, options: { requirementsPage: boolean }): string[] {
  const found: string[] = [];
  const { text } = unit;
  const version = (re: RegExp, expected: string, what: string) => {
    for (const m of text.matchAll(re)) {
      const v = m[1] ?? '';
      if (v !== expected) found.push(`${what} ${v}, but the code pins ${expected}`);
    }
  };
  version(/\bKubernetes v?(\d+\.\d+\.\d+)/g, f.kubernetes.slice(1), 'Kubernetes');
  version(/\b(?:k8s-|dl\.k8s\.io\/release\/|--version` says )(v\d+\.\d+\.\d+)/g, f.kubernetes, 'Kubernetes');
  version(/\betcd[ -](v\d+\.\d+\.\d+)/g, f.etcd, 'etcd');
  version(/etcd-io\/etcd\/releases\/(?:download|tags?)\/(v[\d.]+\d)/g, f.etcd, 'etcd');
  for (const m of text.matchAll(/\betcd (\d+\.\d+)(?![.\d])/g))
    if (!f.etcd.startsWith(`v${m[1]}.`)) found.push(`etcd ${m[1]}, but the code pins ${f.etcd}`);
  version(/\bkwok[ -@](v\d+\.\d+\.\d+)/g, f.kwok, 'kwok');
  version(/kubernetes-sigs\/kwok\/releases\/(?:download|tags?)\/(v[\d.]+\d)/g, f.kwok, 'kwok');
  version(/\bhelm[ -](v\d+\.\d+\.\d+)/g, f.helm, 'helm');
  for (const m of text.matchAll(/\bGo\s*(?:≥|>=)\s*(\d+\.\d+(?:\.\d+)?)/g))
    if (m[1] !== f.goMinimum) found.push(`Go ≥ ${m[1]}, but the build needs Go ≥ ${f.goMinimum}`);
  for (const m of text.matchAll(/\b(?:Go |go)(\d+)\.(\d+)\.\d+/g)) {
    const [major, minor] = f.goMinimum.split('.').map(Number) as [number, number];
    if (Number(m[1]) < major || (Number(m[1]) === major && Number(m[2]) < minor))
      found.push(`${m[0].trim()} is older than the Go ≥ ${f.goMinimum} the build needs`);
  }
  found.push(...nodeViolations(text, unit.block, f));

  // a sentence that links to the Requirements section is the link, not a statement of them
  if (!unit.code && !text.includes('README.md#requirements')) {
    if (GO_REQUIREMENT.test(text) && !options.requirementsPage)
      found.push("states a Go requirement: link to README's Requirements (../README.md#requirements) instead");
    if (f.linuxWithoutGo) {
      if (KWOK_NEEDS_GO.test(text))
        found.push(
          'says kwok needs Go or cannot be verified, but kwok is downloaded and verified by its GitHub digest',
        );
      if (/\b(?:need|needs|needed|require|requires|required)\b[^.;]{0,60}\bGo\b/.test(text) && !GO_QUALIFIED.test(text))
        found.push('says Go is needed, but on linux amd64/arm64 every binary is downloaded: say where it is needed');
      if (/\bbinaries (?:are|get) built\b[^.;]*\bGo\b/.test(text) && !GO_QUALIFIED.test(text))
        found.push('says the binaries are built from Go, but on linux amd64/arm64 they are downloaded');
    } else if (/\b[Nn]o Go\b|\bnothing needs Go\b|\bGo is not (?:needed|required)\b/.test(text)) {
      found.push('says no Go is needed, but a component has no published digest, so it is built from Go');
    }
    if (GO_BUILD.test(text) && MINUTES.test(text) && !/\bhelm\b/i.test(unit.block) && !text.includes(f.coldBuild))
      found.push(`states a time for the Go build; the code's figure is "${f.coldBuild}"`);
  }
  return found;
}

/** Node versions: the packages' minimum exactly, majors that are supported, the repository's Node within its range. */
function nodeViolations(text: string, block: string, f: Facts): string[] {
  const found: string[] = [];
  const [minMajor, minMinor] = f.nodeMinimum;
  const [repoMajor, repoMinor] = f.repoNode;
  const stated = `${minMajor}.${minMinor}`;
  // a Node below the minimum may be named as the example of one that is refused
  const older = /\bolder\b|\bold Node\b|\bbad inputs?\b|this is v\d/.test(block);
  for (const m of text.matchAll(/\bNode(?:\.js)?\s+(?:≥\s*|>=\s*)?v?(\d+)(?:\.(\d+))?(?:\.\d+)?(?![\d×])(\+)?/g)) {
    const major = Number(m[1]);
    const minor = m[2] === undefined ? undefined : Number(m[2]);
    const isMinimum = /≥|>=/.test(m[0]) || m[3] === '+';
    if (isMinimum && `${major}.${minor}` !== stated) {
      found.push(`"${m[0]}" as a minimum, but engines.node says >=${stated}`);
    } else if (major < minMajor) {
      if (!older) found.push(`Node ${major} is older than the supported Node ${minMajor} (engines.node >=${stated})`);
    } else if (major === minMajor) {
      if (minor !== undefined && minor < minMinor)
        found.push(`Node ${major}.${minor} is older than engines.node >=${stated}`);
    } else if (major === repoMajor) {
      if (minor !== undefined && minor < repoMinor)
        found.push(`Node ${major}.${minor} is older than the repository's engines (>=${repoMajor}.${repoMinor})`);
    } else if (major > repoMajor) {
      found.push(`Node ${major}: the code is tested on Node ${minMajor} and ${repoMajor}`);
    }
  }
  for (const m of text.matchAll(/(?:engines(?:\.node)?:?\s*["`]?>=|\bNode[^.;]{0,30}\()(\d+\.\d+)(?:\s+or newer)?/g))
    if (m[1] !== stated && /\bNode\b|engines/.test(text))
      found.push(`Node ${m[1]} as a minimum, but engines.node says >=${stated}`);
  for (const m of text.matchAll(/\b(\d+\.\d+) or newer\b/g))
    if (/\bNode\b/.test(text) && m[1] !== stated)
      found.push(`Node ${m[1]} or newer, but engines.node says >=${stated}`);
  return found;
}

/** The pages: README.md, docs/*.md, every package's README, and the README template of a new project. */
async function pages(): Promise<{ file: string; text: string }[]> {
  const out: { file: string; text: string }[] = [];
  const read = async (path: string) => out.push({ file: path, text: await readFile(join(ROOT, path), 'utf8') });
  await read('README.md');
  for (const name of (await readdir(join(ROOT, 'docs'))).sort()) if (name.endsWith('.md')) await read(`docs/${name}`);
  for (const dir of ['packages', 'operators']) {
    for (const entry of await readdir(join(ROOT, dir), { withFileTypes: true })) {
      const readme = join(dir, entry.name, 'README.md');
      if (entry.isDirectory() && (await readFile(join(ROOT, readme)).catch(() => undefined))) await read(readme);
    }
  }
  const templates = await readFile(join(ROOT, 'packages/cli/src/scaffold/templates.ts'), 'utf8');
  const template = /function readmeFile\(p: Project\): string \{\s*return `([\s\S]*?)`;\s*\}/.exec(templates);
  assert.ok(template?.[1], "the scaffold's README template was not found in templates.ts");
  out.push({ file: 'packages/cli/src/scaffold/templates.ts (README.md of a new project)', text: template[1] });
  return out;
}

/** Where a page may state the Go requirement: README's Requirements section, and the packages' own READMEs. */
function isRequirementsPlace(unit: Unit): boolean {
  return (
    (unit.file === 'README.md' && unit.section === '## Requirements') || /^packages\/[^/]+\/README\.md$/.test(unit.file)
  );
}

test('every page agrees with the code on Go, kwok, Node, the versions and the build time', async () => {
  const f = await facts();
  const problems: string[] = [];
  for (const page of await pages())
    for (const unit of units(page.file, page.text))
      for (const why of violations(unit, f, { requirementsPage: isRequirementsPlace(unit) }))
        problems.push(
          `${relative(ROOT, join(ROOT, unit.file))}:${unit.line}: ${why}\n    “${unit.text.slice(0, 220)}”`,
        );
  assert.equal(problems.length, 0, `\n${problems.join('\n')}`);
});

test("README's Requirements section states the Go, kwok and Node facts of the code", async () => {
  const f = await facts();
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(
    readme.indexOf('## Requirements'),
    readme.indexOf('\n## ', readme.indexOf('## Requirements') + 3),
  );
  assert.ok(section.startsWith('## Requirements'), 'README has a "## Requirements" section');
  for (const needed of [
    f.kubernetes,
    f.etcd,
    f.kwok,
    `Go ≥ ${f.goMinimum}`,
    f.coldBuild.replace(' on 2 cores', ''),
    `${f.nodeMinimum[0]}.${f.nodeMinimum[1]}`,
    `Node ${f.repoNode[0]} LTS`,
    'openssl',
    'macOS',
    'GITHUB_TOKEN',
  ])
    assert.ok(section.replace(/\s+/g, ' ').includes(needed), `README's Requirements section states ${needed}`);
  assert.equal(
    /\*\*No Go\.\*\*/.test(section),
    f.linuxWithoutGo,
    'it says "No Go" exactly when the code needs none on Linux',
  );
  for (const page of ['docs/tutorial.md', 'docs/testenv.md', 'docs/cli.md'])
    assert.match(
      await readFile(join(ROOT, page), 'utf8'),
      /\]\(\.\.\/README\.md#requirements\)/,
      `${page} links to it`,
    );
});

test('the check catches what the docs used to say', async () => {
  const f = await facts();
  const flagged = (file: string, text: string, section = '') =>
    units(file, text).flatMap((u) =>
      violations({ ...u, section: section || u.section }, f, {
        requirementsPage: isRequirementsPlace({ ...u, section }),
      }),
    );
  // docs/tutorial.md before issue 26
  const tutorial = flagged(
    'docs/tutorial.md',
    "You need **Node.js 24 LTS** or **22 LTS** (22.18 or newer) with npm; an older Node gets one line saying so. The first\ntime, you also need Go ≥ 1.26: opkit builds the local cluster's binaries once (~7 minutes; no Docker) into\n`~/.cache/opkit`.",
  );
  assert.ok(
    tutorial.some((w) => /states a Go requirement/.test(w)),
    tutorial.join('\n'),
  );
  assert.ok(
    tutorial.some((w) => /Go is needed, but on linux/.test(w)),
    tutorial.join('\n'),
  );
  assert.ok(
    tutorial.some((w) => /time for the Go build/.test(w)),
    tutorial.join('\n'),
  );
  // README before issue 26 (its Set-up section and its Requirements section)
  const setup = flagged(
    'README.md',
    'kwok publishes no checksums, so it alone is built with Go when Go is present — or comes from a mirror.',
    '## Set-up (this repository)',
  );
  assert.ok(
    setup.some((w) => /kwok needs Go/.test(w)),
    setup.join('\n'),
  );
  const requirements = flagged(
    'README.md',
    '- Go is **not** required for Kubernetes and etcd on linux amd64/arm64. kwok publishes no checksums, so straight from upstream kwok is still built with Go ≥ 1.26 (about 90 s). A cold build of everything takes about 14 minutes on 2 cores.',
    '## Requirements',
  );
  assert.ok(
    requirements.some((w) => /kwok needs Go/.test(w)),
    requirements.join('\n'),
  );
  assert.ok(
    requirements.some((w) => /time for the Go build/.test(w)),
    requirements.join('\n'),
  );
  assert.ok(!requirements.some((w) => /states a Go requirement/.test(w)), 'the Requirements section may state it');
  // docs/testenv.md before issue 26
  const testenv = flagged(
    'docs/testenv.md',
    'No Go is needed: like `setup-envtest use`, the first start downloads them.',
  );
  assert.ok(
    testenv.some((w) => /states a Go requirement/.test(w)),
    testenv.join('\n'),
  );
  // versions the code does not pin
  const versions = flagged(
    'docs/x.md',
    'Kubernetes v1.36.0, etcd v3.6.1, kwok v0.7.0 and helm v3.19.0, Go ≥ 1.25, Node 20 LTS, Node 26, Node ≥ 22.12 and `engines: >=22.12`.',
  );
  for (const what of [
    'Kubernetes 1.36.0',
    'etcd v3.6.1',
    'kwok v0.7.0',
    'helm v3.19.0',
    'Go ≥ 1.25',
    'Node 20',
    'Node 26',
    'Node ≥ 22.12',
    'Node 22.12 as a minimum',
  ])
    assert.ok(
      versions.some((w) => w.includes(what)),
      `${what} is flagged:\n${versions.join('\n')}`,
    );
  // and what is true passes
  assert.deepEqual(
    flagged(
      'docs/x.md',
      `Kubernetes ${f.kubernetes}, etcd ${f.etcd} and kwok ${f.kwok}; opkit needs Node ≥ ${f.nodeMinimum.join('.')} (this is v20.20.2): install Node ${f.nodeMinimum[0]} LTS or newer. Measured on Node ${f.repoNode[0]}.${f.repoNode[1] + 10}.0 and Go ${f.goMinimum}.8.`,
    ),
    [],
  );
});
