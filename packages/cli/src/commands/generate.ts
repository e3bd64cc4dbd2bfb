/**
 * @module commands/generate
 * `opkit generate [--helm] [--check] [--dir DIR]`: CRDs, RBAC, manager manifests and dist/install.yaml from the code
 * (see generate/manifests.ts); with `--helm`, or once dist/chart/ exists, the Helm chart too (generate/helm.ts).
 * Every CRD is first checked as the apiserver will check it (generate/check-crds.ts: CEL rules compiled with types,
 * their cost): a CRD it would refuse fails the command before anything is written. Then the samples
 * (config/samples/*.yaml) are checked against those CRDs as the apiserver would check their apply
 * (generate/check-samples.ts): each field it would refuse is one line naming the file and the field. `--check` writes
 * nothing and exits 1 naming every stale file and every such sample (for CI, and the scaffold's `pretest`), each
 * with the command or the edit that fixes it. Plain `generate` writes, then reports such samples (exit 0: the
 * generated files are right; the sample is the user's to fix). A generated file the code no longer makes under
 * dist/chart/ (which helm renders whole), config/policies/ or config/fleet/ is removed, or named by `--check`. Samples and other files that are
 * the user's are never written. Checks that passed on the same inputs before are not run again
 * (generate/check-memo).
 */
import { access, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { checkCrds } from '../generate/check-crds.ts';
import { checkMemo } from '../generate/check-memo.ts';
import { checkSamples, describeSampleProblem } from '../generate/check-samples.ts';
import { CHART_DIR, chartFiles } from '../generate/helm.ts';
import { generatedFiles, loadApis } from '../generate/manifests.ts';
import { readProject } from '../project/project.ts';
import { obsoleteFiles, staleFiles, writeFiles } from '../scaffold/files.ts';

export const GENERATE_HELP = `Usage: opkit generate [--helm] [--check] [--dir DIR]

Checks every CRD as the apiserver will (CEL rules compiled with types, their cost), then writes config/ (CRDs from
the TypeBox kinds, RBAC from the controllers' declared permissions, the manager Deployment, kustomizations) and
dist/install.yaml. --helm: also the Helm chart in dist/chart/ (kept up to date from then on). Reports each sample
(config/samples/*.yaml, yours: never rewritten) the apiserver would refuse, naming the file and the field.
--check: write nothing; exit 1 if any generated file is stale or a sample would be refused (the scaffold's pretest).
`;

/** The command that brings the generated files up to date, as a scaffolded project runs it. */
const FIX = 'npx opkit generate';
const SAMPLES_REFUSED =
  'samples the apiserver would refuse (config/samples/ is yours: opkit generate never rewrites it):';

export async function generate(
  dir: string,
  check: boolean,
  out: (line: string) => void,
  helm = false,
): Promise<number> {
  const project = await readProject(dir);
  const apis = await loadApis(dir, project);
  // the same inputs passed before: the same answer, without loading the validator (generate/check-memo)
  const memo = await checkMemo(dir, project, apis);
  let samples: string[] = [];
  if (!memo.passed) {
    await checkCrds(project, apis);
    samples = (await checkSamples(dir, project, apis)).map(describeSampleProblem);
    if (samples.length === 0) await memo.record();
  }
  const files = generatedFiles(project, apis);
  const hasChart = await access(join(dir, CHART_DIR, 'Chart.yaml')).then(
    () => true,
    () => false,
  );
  const chart = helm || hasChart;
  if (chart) for (const [path, content] of chartFiles(project, apis)) files.set(path, content);
  // helm renders every file of the chart: one left from an earlier generation would install its objects twice; a
  // policy or the members' RBAC left from one would be applied with the others
  const obsolete = [
    ...(chart ? await obsoleteFiles(dir, CHART_DIR, files) : []),
    ...(await obsoleteFiles(dir, 'config/policies', files)),
    ...(await obsoleteFiles(dir, 'config/fleet', files)),
  ];
  if (check) {
    const stale = [...(await staleFiles(dir, files)), ...obsolete.map((f) => `${f} (no longer generated)`)];
    if (stale.length === 0 && samples.length === 0) {
      out('generated files are up to date');
      return 0;
    }
    if (stale.length > 0) out(`stale generated files (run ${FIX}):\n  ${stale.join('\n  ')}`);
    if (samples.length > 0) out(`${SAMPLES_REFUSED}\n  ${samples.join('\n  ')}`);
    return 1;
  }
  const result = await writeFiles(dir, files);
  for (const f of result.written) out(`wrote ${f}`);
  for (const f of obsolete) {
    await rm(join(dir, f));
    out(`removed ${f} (no longer generated)`);
  }
  if (result.written.length === 0 && obsolete.length === 0) out('generated files are up to date');
  if (samples.length > 0) out(`${SAMPLES_REFUSED}\n  ${samples.join('\n  ')}`);
  return 0;
}

export async function generateCommand(argv: readonly string[], out: (line: string) => void): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      check: { type: 'boolean', default: false },
      helm: { type: 'boolean', default: false },
      dir: { type: 'string', default: '.' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    out(GENERATE_HELP);
    return 0;
  }
  return generate(resolve(values.dir), values.check, out, values.helm);
}
