/**
 * @module generate/check-crds
 * The generated CRDs, checked as the apiserver checks them on apply, before anything is written: offline, with
 * `@opkit/testenv/cel` (the apiserver's own validation of the pinned Kubernetes version, compiled to WebAssembly). So
 * every CEL rule is compiled with types against the schema node it sits on (a typo in a field name, a type error,
 * `oldSelf` where there is no old value), its estimated cost is held to the per-rule and per-CRD budgets, and the
 * schema must be structural.
 *
 * The project's admission policies (src/policies.ts) are compiled the same way, each expression in the apiserver's
 * environment, and type-checked against the schemas of the project's kinds they match: a ValidatingAdmissionPolicy's
 * validations, a MutatingAdmissionPolicy's variables, match conditions and mutations (the fields and values an apply
 * configuration sets, a JSON patch's constant paths, no apply configuration of an atomic list).
 *
 * Guarantees: when a CRD would be refused, `checkCrds` throws `SchemaRejected` naming the API's source file, the kind,
 * and for each error the version, the schema path, the rule and the apiserver's own words (the compiler's caret line
 * included); for a policy, `PolicyRejected` naming the policy, the field and the expression — also for an expression
 * the apiserver would accept but that does not type-check against a matched kind (a typo in a field name, which
 * would fail every write at run time, or which a mutation would write and the schema prune). Nothing has been written
 * yet.
 */
import { type CrdProblem, loadValidator, type PolicyProblem } from '@opkit/testenv/cel';
import { CliError } from '../errors.ts';
import type { Project } from '../project/project.ts';
import { apiFile, crdObject, type LoadedApi, policiesOf } from './manifests.ts';
import { POLICIES_FILE } from './policies.ts';

export async function checkCrds(p: Project, apis: readonly LoadedApi[]): Promise<void> {
  if (apis.length === 0) return;
  const validator = await loadValidator();
  const refused: string[] = [];
  const crds = apis.map((api) => crdObject(p, api));
  for (const [i, api] of apis.entries()) {
    const check = validator.checkCrd(crds[i] as object);
    if (check.ok) continue;
    refused.push(
      `${apiFile(api.entry)}: the apiserver would refuse the ${api.entry.kind} CRD:`,
      ...check.problems.map((problem) => `  ${describe(problem)}`),
    );
  }
  if (refused.length > 0) {
    throw new CliError('SchemaRejected', `${refused.join('\n')}\nfix the schema or rule; nothing was written`);
  }
  for (const policy of policiesOf(apis)) {
    const check = validator.checkPolicy(policy, crds);
    if (check.ok) continue;
    refused.push(
      `${POLICIES_FILE}: policy ${policy.definition.name}:`,
      ...check.problems.map((problem) => `  ${describePolicyProblem(problem)}`),
    );
  }
  if (refused.length > 0) {
    throw new CliError('PolicyRejected', `${refused.join('\n')}\nfix the expression; nothing was written`);
  }
}

/** One policy problem: the field and expression, then the compiler's words (a type check names the kind first). */
export function describePolicyProblem(problem: PolicyProblem): string {
  const what = problem.typeCheck ? 'does not type-check' : 'the apiserver refuses it';
  const expression = problem.expression !== undefined ? ` \`${problem.expression}\`` : '';
  return `${problem.field}${expression} (${what}): ${problem.detail.trimEnd().replaceAll('\n', '\n    ')}`;
}

/**
 * What the apiserver allows for a rule's `fieldPath` it refused as "must be a valid path", and how to word the
 * message instead, for the node the rule is on.
 */
function fieldPathHint(problem: CrdProblem): string | undefined {
  if (problem.ruleField !== 'fieldPath' || !problem.detail.startsWith('must be a valid path')) return undefined;
  const root = problem.schemaPath === '.';
  const allowed = root
    ? 'a field of the object its schema declares, such as `.spec.replicas` or `.status.phase`; of metadata only ' +
      '`.metadata.name` and `.metadata.generateName`, the fields a CRD may declare in it'
    : `a field its schema declares below \`${problem.schemaPath}\`, such as \`.replicas\`: never one outside that node`;
  const node = root ? 'the object' : problem.schemaPath;
  return (
    `fieldPath is relative to the node the rule is on (${node}) and must name ${allowed}.\n` +
    `For another field, leave fieldPath out and name the field in the message (message: 'metadata.labels must …'): ` +
    `the apiserver then reports the error on ${root ? 'the object as a whole' : node}`
  );
}

/** One problem: where (version, schema node, rule), then the apiserver's detail, continuation lines indented. */
export function describe(problem: CrdProblem): string {
  const where = [
    problem.version !== undefined ? `version ${problem.version}` : undefined,
    problem.schemaPath === '.'
      ? 'the object'
      : problem.schemaPath !== undefined
        ? `schema ${problem.schemaPath}`
        : `field ${problem.field}`,
    problem.rule !== undefined
      ? `rule \`${problem.rule}\`${problem.ruleField ? ` (its ${problem.ruleField})` : ''}`
      : undefined,
  ].filter((part) => part !== undefined);
  const hint = fieldPathHint(problem);
  const detail = hint === undefined ? problem.detail : `${problem.detail}\n${hint}`;
  return `${where.join(', ')}: ${detail.replaceAll('\n', '\n    ')}`;
}
