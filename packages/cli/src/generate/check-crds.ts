/**
 * @module generate/check-crds
 * The generated CRDs, checked as the apiserver checks them on apply, before anything is written: offline, with
 * `@opkit/testenv/cel` (the apiserver's own validation of the pinned Kubernetes version, compiled to WebAssembly). So
 * every CEL rule is compiled with types against the schema node it sits on (a typo in a field name, a type error,
 * `oldSelf` where there is no old value), its estimated cost is held to the per-rule and per-CRD budgets, and the
 * schema must be structural.
 *
 * Guarantees: when a CRD would be refused, `checkCrds` throws `SchemaRejected` naming the API's source file, the kind,
 * and for each error the version, the schema path, the rule and the apiserver's own words (the compiler's caret line
 * included); nothing has been written yet.
 */
import { type CrdProblem, loadValidator } from '@opkit/testenv/cel';
import { CliError } from '../errors.ts';
import type { Project } from '../project/project.ts';
import { apiFile, crdObject, type LoadedApi } from './manifests.ts';

export async function checkCrds(p: Project, apis: readonly LoadedApi[]): Promise<void> {
  if (apis.length === 0) return;
  const validator = await loadValidator();
  const refused: string[] = [];
  for (const api of apis) {
    const check = validator.checkCrd(crdObject(p, api));
    if (check.ok) continue;
    refused.push(
      `${apiFile(api.entry)}: the apiserver would refuse the ${api.entry.kind} CRD:`,
      ...check.problems.map((problem) => `  ${describe(problem)}`),
    );
  }
  if (refused.length > 0) {
    throw new CliError('SchemaRejected', `${refused.join('\n')}\nfix the schema or rule; nothing was written`);
  }
}

/** One problem: where (version, schema node, rule), then the apiserver's detail, continuation lines indented. */
export function describe(problem: CrdProblem): string {
  const where = [
    problem.version !== undefined ? `version ${problem.version}` : undefined,
    problem.schemaPath !== undefined ? `schema ${problem.schemaPath}` : `field ${problem.field}`,
    problem.rule !== undefined ? `rule \`${problem.rule}\`` : undefined,
  ].filter((part) => part !== undefined);
  return `${where.join(', ')}: ${problem.detail.replaceAll('\n', '\n    ')}`;
}
