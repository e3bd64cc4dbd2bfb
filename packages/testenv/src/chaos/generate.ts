/**
 * @module chaos/generate
 * Generated scenarios, as Acto (SOSP '23) makes them: for each kind of the project's CRDs, `generatedScenarios`
 * applies the kind's sample (config/samples; without one, an object with the schema's required fields), then changes
 * ONE property of its spec per step to another value the schema allows (chaos/generate-values), then deletes it. The
 * seed picks the properties, those not yet changed in the scenario first, so runs with other seeds exercise others.
 * Every state is kept valid by the offline validator (an `AdmissionCheck`: the apiserver's own schema validation and
 * CEL rules, transition rules against the state before): a candidate it refuses, or one it would store unchanged (a
 * default put back), is discarded and another tried; a property none of whose candidates passes is skipped.
 *
 * Guarantees:
 * - The same CRDs, samples and seed give the same scenarios; each kind has a random source of its own (the seed and
 *   its kind), so another CRD in the project changes no other kind's scenario.
 * - Every applied state was admitted by the check: the first as a create, each next as an update of the one before
 *   (as stored: defaults applied). Metadata is the sample's; `status` is never written.
 * - A change never applies an emptied object or map (`{}`): it is left out instead. The scenario is applied with
 *   server-side apply, which stores null for a map emptied of entries its applier owned; the schema refuses that,
 *   where the check (an update) would have admitted `{}`.
 * - A scenario is named `generated:<Kind>`; trial ids (`generated:AppService:3:crash@1`) parse back (chaos/plan).
 * - A kind gets no scenario when its sample is of a version its CRD does not serve, when the check refuses its
 *   first object, or when no property can change validly; `log` says which and why.
 * Costs: at most `MAX_CHECKS` checks per change (milliseconds each). The real validator (`loadAdmissionCheck`) takes
 * about 1.5 s and 460 MiB to load, once per process: load it only when generated scenarios are asked for.
 * Caveat: a kind's scenario has that kind's object alone; a sample that names another (a snapshot its store) finds
 * it missing, unless the operator creates it.
 */
import type { LoadOptions, Validator } from '../cel.ts';
import {
  canonical,
  isObject,
  type Json,
  type Path,
  pathText,
  type Schema,
  type Site,
  schemaOf,
  sitesOf,
  withValue,
} from './generate-schema.ts';
import { build, candidates, type Random, shuffle } from './generate-values.ts';
import type { Manifest, ObjectKey } from './objects.ts';
import { seeded } from './plan.ts';
import type { ChaosScenario, ScenarioStep } from './scenario.ts';

/** The apiserver's answer to a write: whether it stores `object` (as it would: defaults applied), and why not. */
export interface AdmissionAnswer {
  /** Whether the apiserver would store it. */
  readonly allowed: boolean;
  /** The object as it would be stored (pruned, defaulted). */
  readonly object: Json;
  /** The refusal (`AppService.app.example.com "web" is invalid: …`). */
  readonly message?: string;
}

/** A write checked as the apiserver checks it: a create without `old`, else an update of the stored `old`. */
export type AdmissionCheck = (crd: object, object: Manifest, old?: Json) => AdmissionAnswer;

/** What `generatedScenarios` makes scenarios from. */
export interface GenerateOptions {
  /** The project's CRD objects (`LoadedCrd.object` of `loadCrds`). */
  readonly crds: readonly object[];
  /** The project's samples (config/samples); the first of a kind is its scenario's start. */
  readonly samples: readonly Manifest[];
  /** The same seed, the same scenarios. */
  readonly seed: number;
  /** The judge of every state (`loadAdmissionCheck()`, or a fake in a test). */
  readonly check: AdmissionCheck;
  /** Changes per scenario (default 4). */
  readonly changes?: number;
  /** Why a kind has no scenario, or fewer changes. */
  readonly log?: (line: string) => void;
}

/** A generated scenario, with what each change does. */
export interface GeneratedScenario extends ChaosScenario {
  /** Step `i + 2` (counted from 1, as trial ids do) makes `changes[i]`: `spec.replicas: 3 → 0`. */
  readonly changes: readonly string[];
}

/** Candidates checked per change at most: a change needs one accepted. */
export const MAX_CHECKS = 40;

const DEFAULT_CHANGES = 4;

/** The scenarios of the module comment, one per kind that can have one, in the CRDs' order. */
export function generatedScenarios(options: GenerateOptions): GeneratedScenario[] {
  const out: GeneratedScenario[] = [];
  for (const crd of options.crds) {
    const facts = factsOf(crd);
    if (facts === undefined) continue;
    const scenario = scenarioOf(facts, options);
    if (scenario !== undefined) out.push(scenario);
  }
  return out;
}

/** The check of a loaded validator (`@opkit/testenv/cel`); an update is given the resourceVersion it needs. */
export function admissionCheck(validator: Pick<Validator, 'create' | 'update'>): AdmissionCheck {
  const versioned = (o: object): Json => ({
    ...o,
    metadata: { ...((o as Json).metadata as Json), resourceVersion: '1' },
  });
  return (crd, object, old) => {
    const a =
      old === undefined
        ? validator.create<Json>(crd, object)
        : validator.update<Json>(crd, versioned(object), versioned(old));
    return { allowed: a.allowed, object: a.object, ...(a.status ? { message: a.status.message } : {}) };
  };
}

/** The check of the real validator, loaded now (once per process: see Costs). */
export async function loadAdmissionCheck(options: LoadOptions = {}): Promise<AdmissionCheck> {
  const { loadValidator } = await import('../cel.ts');
  return admissionCheck(await loadValidator(options));
}

interface CrdFacts {
  readonly crd: object;
  readonly name: string;
  readonly group: string;
  readonly kind: string;
  readonly served: readonly string[];
  readonly storage: string;
}

function factsOf(crd: object): CrdFacts | undefined {
  const { metadata, spec } = crd as {
    metadata?: { name?: string };
    spec?: {
      group?: string;
      names?: { kind?: string };
      versions?: { name: string; served?: boolean; storage?: boolean }[];
    };
  };
  const kind = spec?.names?.kind;
  const versions = spec?.versions ?? [];
  const storage = (versions.find((v) => v.storage === true) ?? versions[0])?.name;
  if (kind === undefined || spec?.group === undefined || storage === undefined) return undefined;
  const served = versions.filter((v) => v.served === true).map((v) => v.name);
  return { crd, name: metadata?.name ?? kind, group: spec.group, kind, served, storage };
}

const groupOf = (apiVersion: string) =>
  apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.lastIndexOf('/')) : '';
const versionOf = (apiVersion: string) => apiVersion.slice(apiVersion.lastIndexOf('/') + 1);

/** FNV-1a of a kind, mixed into the seed. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (const c of text) h = Math.imul(h ^ (c.codePointAt(0) ?? 0), 0x01000193);
  return h >>> 0;
}

/** The kind's sample, else an object of its storage version with the spec's required fields. */
function startOf(facts: CrdFacts, samples: readonly Manifest[], random: Random): Manifest | string {
  const sample = samples.find((s) => s.kind === facts.kind && groupOf(s.apiVersion) === facts.group);
  if (sample !== undefined)
    return facts.served.includes(versionOf(sample.apiVersion))
      ? structuredClone(sample)
      : `its sample's version ${sample.apiVersion} is not served by ${facts.name}`;
  const specSchema = schemaOf(facts.crd, facts.storage)?.properties?.spec;
  const spec = specSchema === undefined ? undefined : build(specSchema, random);
  return {
    apiVersion: `${facts.group}/${facts.storage}`,
    kind: facts.kind,
    metadata: { name: `${facts.kind.toLowerCase()}-generated` },
    ...(spec !== undefined ? { spec } : {}),
  };
}

/** The changing state of a scenario being made. */
interface State {
  /** What the user applies: the start with the changes so far. */
  applied: Json;
  /** What the apiserver stores of it (defaults applied): the `old` of the next update. */
  stored: Json;
  /** Properties changed already (`propertyOf`), and sites (by path) none of whose candidates passed. */
  readonly used: Set<string>;
  readonly dead: Set<string>;
}

function scenarioOf(facts: CrdFacts, options: GenerateOptions): GeneratedScenario | undefined {
  const name = `generated:${facts.kind}`;
  const skip = (why: string): undefined => {
    options.log?.(`${name}: no scenario: ${why}`);
    return undefined;
  };
  const random = seeded((options.seed ^ hash(facts.kind)) >>> 0);
  const first = startOf(facts, options.samples, random);
  if (typeof first === 'string') return skip(first);
  const created = options.check(facts.crd, first);
  if (!created.allowed) return skip(`the first object is refused: ${created.message ?? '?'}`);
  const specSchema = schemaOf(facts.crd, versionOf(first.apiVersion))?.properties?.spec;
  const state: State = { applied: first, stored: created.object, used: new Set(), dead: new Set() };
  const steps: ScenarioStep[] = [{ apply: first }];
  const changes: string[] = [];
  const wanted = options.changes ?? DEFAULT_CHANGES;
  while (specSchema !== undefined && changes.length < wanted) {
    const next = change(facts.crd, specSchema, state, random, options.check);
    if (next === undefined) break;
    steps.push({ apply: state.applied as Manifest, note: next });
    changes.push(next);
  }
  if (changes.length === 0) return skip('no property of the spec can change validly');
  if (changes.length < wanted)
    options.log?.(`${name}: ${changes.length} changes of ${wanted}: no other property can change validly`);
  const key: ObjectKey = { apiVersion: first.apiVersion, kind: first.kind, name: first.metadata.name ?? '' };
  steps.push({ delete: key });
  return { name, source: `generated from ${facts.name} (seed ${options.seed})`, steps, changes };
}

/** The schema property of a path: `spec.ports[*].name` (every item of an array is one property). */
const propertyOf = (path: Path): string => pathText(path).replace(/\[\d+\]/g, '[*]');

/**
 * One change of one site, admitted as an update of the stored state (and not a no-op), made to `state`; its
 * description, or undefined when no site has one within `MAX_CHECKS` checks.
 */
function change(crd: object, specSchema: Schema, state: State, random: Random, check: AdmissionCheck) {
  const sites = sitesOf(specSchema, state.stored.spec).filter((s) => !state.dead.has(pathText(s.path)));
  const fresh = sites.filter((s) => !state.used.has(propertyOf(s.path)));
  const order = [
    ...shuffle(fresh, random),
    ...shuffle(
      sites.filter((s) => !fresh.includes(s)),
      random,
    ),
  ];
  let checks = 0;
  for (const site of order) {
    for (const value of candidates(site, random)) {
      if (checks++ >= MAX_CHECKS) return undefined;
      const applied = withoutEmptied(withValue(state.applied, site.path, value, state.stored), state.applied);
      const answer = check(crd, applied as Manifest, state.stored);
      if (!answer.allowed || canonical(answer.object.spec) === canonical(state.stored.spec)) continue;
      state.applied = applied;
      state.stored = answer.object;
      state.used.add(propertyOf(site.path));
      return describeChange(site, value);
    }
    state.dead.add(pathText(site.path));
  }
  return undefined;
}

/**
 * `manifest` with every object or map the change emptied (one with entries in `before`) left out: a server-side apply
 * of `{}` where the applier owned entries stores null, which the schema refuses (as PUT, which the offline check
 * models, would not). An object that was empty before stays.
 */
function withoutEmptied(manifest: Json, before: Json): Json {
  const prune = (v: unknown, was: unknown): unknown => {
    if (!isObject(v)) return v;
    const out: Json = {};
    for (const [k, x] of Object.entries(v)) {
      const prior = isObject(was) ? was[k] : undefined;
      const p = prune(x, prior);
      if (!(isObject(p) && Object.keys(p).length === 0 && isObject(prior) && Object.keys(prior).length > 0)) out[k] = p;
    }
    return out;
  };
  return isObject(manifest.spec) ? { ...manifest, spec: prune(manifest.spec, before.spec) as Json } : manifest;
}

const show = (v: unknown): string => {
  const text = JSON.stringify(v) ?? 'undefined';
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
};

/** `spec.replicas: 3 → 0`, `spec.env: added {"name":"example"}`, `spec.args: removed`. */
function describeChange(site: Site, value: unknown): string {
  const { current } = site;
  const at = pathText(site.path);
  if (value === undefined) return `${at}: removed (was ${show(current)})`;
  if (current === undefined) return `${at}: set to ${show(value)}`;
  if (Array.isArray(current) && Array.isArray(value)) {
    if (value.length > current.length) return `${at}: added ${show(value.at(-1))}`;
    const i = current.findIndex((v, j) => canonical(v) !== canonical(value[j]));
    return `${at}: removed ${show(current[i])}`;
  }
  if (isObject(current) && isObject(value)) {
    const added = Object.keys(value).find((k) => !(k in current));
    if (added !== undefined) return `${at}: added ${show(added)}: ${show(value[added])}`;
    return `${at}: removed ${show(Object.keys(current).find((k) => !(k in value)))}`;
  }
  return `${at}: ${show(current)} → ${show(value)}`;
}
