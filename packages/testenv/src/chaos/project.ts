/**
 * @module chaos/project
 * An opkit project as a chaos run needs it (`projectChaos(dir)`): the operator's command (`node src/main.ts` in the
 * project), its CRDs (`config/crd/bases`), its RBAC (`config/rbac/*.yaml`), its webhook configurations
 * (`config/webhook/*.yaml`), and its scenarios and invariants: the
 * samples (`config/samples/*.yaml`: applied, edited, deleted), when asked one scenario per kind generated within its
 * schema (chaos/generate, `{ generated: { seed } }`), and the files `test/chaos/*.ts`, each of which may
 * export `scenarios` (an array of `{ name, steps }`), `invariants` (an array of `{ name, check }`) and `ignoreFields`
 * (status paths that differ between correct runs). What `opkit chaos` runs, and what a test passes to `runChaos`.
 * Sharded when asked (`{ sharding: true }`) or when the project's install is (`../sharding` among the components of
 * `config/default/kustomization.yaml`): its RBAC then adds `config/sharding/rbac.yaml`. A fleet operator (one with
 * `config/fleet/member-rbac.yaml`, or when asked) runs with member clusters (two by default) under that RBAC.
 *
 * Guarantees: a file that does not parse or load, an export of the wrong shape and a scenario `checkScenario` refuses
 * are a `ChaosInput` error naming the file (and the step); so is a project without CRDs or without scenarios, and a
 * sharded run of a project without `config/sharding/rbac.yaml`, and a run with members without
 * `config/fleet/member-rbac.yaml`.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import yaml from 'js-yaml';
import { loadCrds } from '../crds.ts';
import { TestenvError } from '../errors.ts';
import { generatedScenarios, loadAdmissionCheck } from './generate.ts';
import type { Manifest } from './objects.ts';
import type { ChaosOptions } from './run.ts';
import { type ChaosScenario, checkScenario, samplesScenario } from './scenario.ts';
import type { ChaosInvariant } from './trial.ts';

/** What a project gives a chaos run. */
export type ProjectChaos = Required<
  Pick<
    ChaosOptions,
    'operator' | 'crds' | 'rbac' | 'webhooks' | 'scenarios' | 'invariants' | 'ignoreFields' | 'sharding'
  >
> &
  Pick<ChaosOptions, 'members'>;

const fail = (message: string) => new TestenvError('ChaosInput', message);

/** The YAML files of `dir/sub`, sorted (kustomization.yaml left out); none when it does not exist. */
async function yamlFiles(dir: string, sub: string): Promise<string[]> {
  const names = await readdir(join(dir, sub)).catch(() => [] as string[]);
  return names
    .filter((n) => /\.ya?ml$/.test(n) && n !== 'kustomization.yaml')
    .sort()
    .map((n) => join(sub, n));
}

/** Every YAML document of the project file `file` that is an object with a kind. */
async function manifests(dir: string, file: string): Promise<Manifest[]> {
  try {
    return yaml
      .loadAll(await readFile(join(dir, file), 'utf8'))
      .filter((d): d is Manifest => typeof d === 'object' && d !== null && 'kind' in d);
  } catch (e) {
    throw fail(`${file}: not YAML a chaos run can read: ${(e as Error).message.split('\n')[0]}`);
  }
}

const list = (file: string, what: string, v: unknown): unknown[] => {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw fail(`${file}: export ${what} must be an array`);
  return v;
};

/** The scenarios, invariants and ignored fields of one `test/chaos/*.ts` file, checked. */
async function chaosFile(
  dir: string,
  file: string,
  into: Pick<ProjectChaos, 'scenarios' | 'invariants' | 'ignoreFields'>,
) {
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(pathToFileURL(join(dir, file)).href)) as Record<string, unknown>;
  } catch (e) {
    throw fail(`${file} could not be loaded: ${(e as Error).message.split('\n')[0]}`);
  }
  for (const s of list(file, 'scenarios', loaded.scenarios)) {
    checkScenario(s, file);
    if (into.scenarios.some((other) => other.name === s.name))
      throw fail(`${file}: a second scenario named "${s.name}" (scenario names are trial ids: make them unique)`);
    (into.scenarios as ChaosScenario[]).push({ ...s, source: file });
  }
  for (const inv of list(file, 'invariants', loaded.invariants)) {
    const { name, check } = (inv ?? {}) as Partial<ChaosInvariant>;
    if (typeof name !== 'string' || typeof check !== 'function')
      throw fail(`${file}: each invariant is { name: string, check(view) { return [messages] } }`);
    (into.invariants as ChaosInvariant[]).push({ name, check });
  }
  for (const f of list(file, 'ignoreFields', loaded.ignoreFields)) {
    if (typeof f !== 'string') throw fail(`${file}: ignoreFields holds dotted paths (strings), such as status.lastRun`);
    (into.ignoreFields as string[]).push(f);
  }
}

/** Whether the project's default install runs sharded (`../sharding` among `config/default`'s components). */
async function installedSharded(dir: string): Promise<boolean> {
  const file = join('config', 'default', 'kustomization.yaml');
  const [k] = await manifests(dir, file).catch(() => []);
  const components = (k as { components?: unknown } | undefined)?.components;
  return Array.isArray(components) && components.some((c) => typeof c === 'string' && /(^|\/)sharding\/?$/.test(c));
}

/** The RBAC of a sharded run: the project's, and config/sharding's. */
async function shardingRbac(dir: string): Promise<Manifest[]> {
  const file = join('config', 'sharding', 'rbac.yaml');
  if (!existsSync(join(dir, file)))
    throw fail(`${join(dir, file)} not found: a sharded chaos run needs its RBAC (run opkit generate)`);
  return manifests(dir, file);
}

/** How `projectChaos` reads a project. */
export interface ProjectChaosOptions {
  /** Run it sharded (default: as `config/default` installs it). */
  readonly sharding?: boolean;
  /**
   * How many member clusters a fleet operator runs with (default: 2 when the project has
   * `config/fleet/member-rbac.yaml`, else none); 0 for none.
   */
  readonly members?: number;
  /**
   * One generated scenario per kind (chaos/generate), from this seed (the run's: a replay needs the same); it loads
   * the offline validator (about 1.5 s and 460 MiB). Default: none.
   */
  readonly generated?: { readonly seed: number; readonly changes?: number; readonly log?: (line: string) => void };
}

/** The chaos run of the opkit project in `dir` (see the module comment). */
export async function projectChaos(dir: string, options: ProjectChaosOptions = {}): Promise<ProjectChaos> {
  const crdDir = join('config', 'crd', 'bases');
  if ((await yamlFiles(dir, crdDir)).length === 0)
    throw fail(`${join(dir, crdDir)} holds no CRD: run opkit generate (and opkit create api) first`);
  const sharding = options.sharding ?? (await installedSharded(dir));
  const rbac = (await Promise.all((await yamlFiles(dir, join('config', 'rbac'))).map((f) => manifests(dir, f)))).flat();
  if (sharding) rbac.push(...(await shardingRbac(dir)));
  const webhooks = (await Promise.all((await yamlFiles(dir, join('config', 'webhook'))).map((f) => manifests(dir, f))))
    .flat()
    .filter((o) => o.kind === 'MutatingWebhookConfiguration' || o.kind === 'ValidatingWebhookConfiguration');
  const members = await fleetMembers(dir, options.members);
  const sampleFiles = await yamlFiles(dir, join('config', 'samples'));
  const samples = (await Promise.all(sampleFiles.map((f) => manifests(dir, f)))).flat();
  const out: Pick<ProjectChaos, 'scenarios' | 'invariants' | 'ignoreFields'> = {
    scenarios: samples.length > 0 ? [samplesScenario(samples, join('config', 'samples'))] : [],
    invariants: [],
    ignoreFields: [],
  };
  if (options.generated !== undefined) {
    const crds = (await loadCrds([join(dir, crdDir)])).map((c) => c.object);
    const check = await loadAdmissionCheck();
    (out.scenarios as ChaosScenario[]).push(...generatedScenarios({ crds, samples, check, ...options.generated }));
  }
  const own = (await readdir(join(dir, 'test', 'chaos')).catch(() => [] as string[]))
    .filter((n) => n.endsWith('.ts') && !n.endsWith('.test.ts') && !n.endsWith('.d.ts'))
    .sort();
  for (const name of own) await chaosFile(dir, join('test', 'chaos', name), out);
  if (out.scenarios.length === 0)
    throw fail(`${dir}: no scenario: add a sample under config/samples/, or a scenario in test/chaos/*.ts`);
  return {
    operator: { command: process.execPath, args: [join(dir, 'src', 'main.ts')], cwd: dir },
    crds: [join(dir, crdDir)],
    rbac,
    webhooks,
    sharding,
    ...(members ? { members } : {}),
    ...out,
  };
}

/** A fleet operator's members: `count` (default 2 with `config/fleet/member-rbac.yaml`), with that RBAC. */
async function fleetMembers(dir: string, count: number | undefined): Promise<ProjectChaos['members']> {
  const file = join('config', 'fleet', 'member-rbac.yaml');
  const has = existsSync(join(dir, file));
  if (count === 0 || (count === undefined && !has)) return undefined;
  if (!has)
    throw fail(
      `${join(dir, file)} not found: a run with member clusters needs their RBAC (export memberPermissions from the controllers that run in members, then run opkit generate)`,
    );
  return { count: count ?? 2, rbac: await manifests(dir, file) };
}
