/**
 * @module generate/check-samples
 * The project's samples (`config/samples/*.yaml`, the user's files) checked against the CRDs `opkit generate` makes
 * from the code, as the apiserver would check a `kubectl apply` of them: offline, with `@opkit/testenv/cel`'s
 * `create` (the apiserver's own validation: pruning, defaults, the OpenAPI schema, the CEL rules).
 *
 * Guarantees: every document of every sample file (but the generated kustomization.yaml) whose `apiVersion` names
 * one of the project's groups is checked: a kind the project does not have, a version its CRD does not serve, and
 * each field the apiserver would refuse is one `SampleProblem`, in file order, naming the file (and the document,
 * in a file of several), the field and the apiserver's words. A file that is not YAML is a problem too. Documents of
 * other groups (a Secret a sample needs) are not checked. Samples are only read, never written.
 *
 * Costs: the validator is loaded once per process (`checkCrds` has loaded it already); a sample then takes a few
 * milliseconds.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeObject } from '@opkit/runtime';
import { loadValidator, type Validator } from '@opkit/testenv/cel';
import yaml from 'js-yaml';
import type { Project } from '../project/project.ts';
import { apiFile, crdObject, type LoadedApi } from './manifests.ts';

export const SAMPLES_DIR = 'config/samples';

/** One thing the apiserver would refuse in a sample. */
export interface SampleProblem {
  /** The sample file, relative to the project, with the document's number in a file of several. */
  readonly file: string;
  /** The field at fault (`spec.schedule`), when the apiserver names one. */
  readonly field?: string;
  /** The apiserver's words (`Required value`), or why the file cannot be read. */
  readonly detail: string;
  /** The API file the sample must fit, when the document is of one of the project's kinds. */
  readonly api?: string;
}

/** What the project's CRDs say about a document: its group, kind and served versions. */
interface CrdFacts {
  readonly group: string;
  readonly kind: string;
  readonly served: readonly string[];
  readonly crd: object;
  readonly api: string;
}

function factsOf(p: Project, api: LoadedApi): CrdFacts {
  type Crd = KubeObject & {
    spec: { group: string; names: { kind: string }; versions: { name: string; served: boolean }[] };
  };
  const crd = crdObject(p, api) as Crd;
  const { spec } = crd;
  return {
    group: spec.group,
    kind: spec.names.kind,
    served: spec.versions.filter((v) => v.served).map((v) => v.name),
    crd,
    api: apiFile(api.entry),
  };
}

/** The sample files, sorted; none when config/samples/ does not exist. */
export async function sampleFiles(dir: string): Promise<string[]> {
  const names = await readdir(join(dir, SAMPLES_DIR)).catch(() => [] as string[]);
  return names
    .filter((n) => /\.ya?ml$/.test(n) && n !== 'kustomization.yaml')
    .sort()
    .map((n) => `${SAMPLES_DIR}/${n}`);
}

/** Every problem of the project's samples against the CRDs of `apis` (none when they all fit). */
export async function checkSamples(dir: string, p: Project, apis: readonly LoadedApi[]): Promise<SampleProblem[]> {
  const files = await sampleFiles(dir);
  if (apis.length === 0 || files.length === 0) return [];
  const crds = apis.map((api) => factsOf(p, api));
  const validator = await loadValidator();
  const problems: SampleProblem[] = [];
  for (const file of files) {
    let docs: unknown[];
    try {
      docs = yaml.loadAll(await readFile(join(dir, file), 'utf8')).filter((d) => d !== null && d !== undefined);
    } catch (err) {
      problems.push({ file, detail: `not YAML: ${(err as Error).message.split('\n')[0]}` });
      continue;
    }
    for (const [i, doc] of docs.entries()) {
      const where = docs.length > 1 ? `${file} (document ${i + 1})` : file;
      // a document's fields in order: the apiserver's validation gives them in no fixed order
      const found = checkDocument(where, doc, crds, validator);
      problems.push(...found.sort((a, b) => (a.field ?? '').localeCompare(b.field ?? '')));
    }
  }
  return problems;
}

/** The problems of one document: none when it is not of the project's groups, or when the apiserver would take it. */
function checkDocument(file: string, doc: unknown, crds: readonly CrdFacts[], validator: Validator): SampleProblem[] {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return [];
  const { apiVersion, kind } = doc as { apiVersion?: unknown; kind?: unknown };
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') return [];
  const slash = apiVersion.lastIndexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  const version = apiVersion.slice(slash + 1);
  const ofGroup = crds.filter((c) => c.group === group);
  if (ofGroup.length === 0) return [];
  const facts = ofGroup.find((c) => c.kind === kind);
  if (!facts) {
    const kinds = ofGroup.map((c) => JSON.stringify(c.kind)).join(', ');
    return [{ file, field: 'kind', detail: `Unsupported value: ${JSON.stringify(kind)}: ${group} has ${kinds}` }];
  }
  if (!facts.served.includes(version)) {
    const served = facts.served.map((v) => JSON.stringify(`${group}/${v}`)).join(', ');
    return [
      {
        file,
        field: 'apiVersion',
        detail: `Unsupported value: ${JSON.stringify(apiVersion)}: the ${kind} CRD serves ${served}`,
        api: facts.api,
      },
    ];
  }
  const admission = validator.create(facts.crd, doc, { version });
  if (admission.allowed) return [];
  const causes = admission.causes.filter((c) => !c.message.endsWith(RULES_NOT_CHECKED));
  if (causes.length === 0) return [{ file, detail: admission.status?.message ?? 'refused', api: facts.api }];
  return causes.map((c) => ({
    file,
    ...(c.field !== undefined && c.field !== '' && c.field !== '<nil>' ? { field: c.field } : {}),
    detail: c.message,
    api: facts.api,
  }));
}

/**
 * The end of the cause the apiserver adds (with no field) when a schema error kept it from running the CEL rules: it
 * says only to fix the others and try again, which is what each of those lines says.
 */
const RULES_NOT_CHECKED =
  'some validation rules were not checked because the object was invalid; correct the existing errors to complete validation';

/** One line per problem: `config/samples/x.yaml: spec.schedule: Required value — update the sample to the API in src/api/v1/x.ts`. */
export function describeSampleProblem(problem: SampleProblem): string {
  const what = problem.field !== undefined ? `${problem.field}: ${problem.detail}` : problem.detail;
  const remedy = problem.api !== undefined ? `update the sample to the API in ${problem.api}` : 'fix the file';
  return `${problem.file}: ${what} — ${remedy}`;
}
