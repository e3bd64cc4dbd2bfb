/**
 * @module commands/deploy-helm
 * `opkit deploy --helm`: installs or upgrades the project's Helm chart, made afresh from the code (generate/helm.ts)
 * into a temporary directory, as the release `<projectName>` in the project's namespace (created when missing), with
 * the image substituted: `helm upgrade --install`. Arguments after `--` go to helm as they are (`-f values.yaml`,
 * `--set …`, `--wait`). `opkit undeploy --helm`: `helm uninstall` of that release; Helm leaves the CRDs (and so the
 * custom resources) in place, as it always does for `crds/`.
 *
 * helm is `$OPKIT_HELM`, else the one on the PATH, else the pinned helm built once from Go modules into the user cache (see @opkit/testenv's helm.ts). helm's output is passed on line by line; a helm failure is a
 * `CliError` with helm's last lines, and the temporary chart is removed in every case.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { CliError } from '../errors.ts';
import { CHART_DIR, chartFiles, splitImage } from '../generate/helm.ts';
import type { LoadedApi } from '../generate/manifests.ts';
import type { Project } from '../project/project.ts';

export interface HelmDeployOptions {
  readonly project: Project;
  readonly apis: readonly LoadedApi[];
  readonly image: string;
  /** A kubeconfig file to pass to helm (default: helm reads KUBECONFIG, as kubectl). */
  readonly kubeconfig: string | undefined;
  readonly helm: string;
  readonly helmArgs: readonly string[];
  readonly remove: boolean;
  readonly out: (line: string) => void;
}

export async function helmDeploy(o: HelmDeployOptions): Promise<void> {
  const release = o.project.projectName;
  const common = ['--namespace', o.project.namespace, ...(o.kubeconfig ? ['--kubeconfig', o.kubeconfig] : [])];
  if (o.remove) {
    await runHelm(o.helm, ['uninstall', release, ...common, ...o.helmArgs], o.out);
    o.out(`uninstalled the Helm release ${release} (its CRDs stay, as Helm leaves crds/ in place)`);
    return;
  }
  const work = await mkdtemp(join(tmpdir(), 'opkit-chart-'));
  try {
    const chart = join(work, release);
    for (const [path, content] of chartFiles(o.project, o.apis, { image: o.image })) {
      const file = join(chart, relative(CHART_DIR, path));
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, content);
    }
    const { repository, tag, digest } = splitImage(o.image);
    await runHelm(
      o.helm,
      [
        'upgrade',
        '--install',
        release,
        chart,
        ...common,
        '--create-namespace',
        '--set-string',
        `image.repository=${repository}`,
        '--set-string',
        `image.tag=${tag}`,
        '--set-string',
        `image.digest=${digest}`,
        ...o.helmArgs,
      ],
      o.out,
    );
    o.out(`deployed ${release} (${o.image}) with Helm as the release ${release} in ${o.project.namespace}`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

function runHelm(helm: string, args: string[], out: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const proc = spawn(helm, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const tail: string[] = [];
    const lines = (chunk: string) => {
      for (const line of chunk.split('\n')) {
        if (!line.trim()) continue;
        out(line);
        tail.push(line);
        if (tail.length > 20) tail.shift();
      }
    };
    proc.stdout.setEncoding('utf8').on('data', lines);
    proc.stderr.setEncoding('utf8').on('data', lines);
    proc.on('error', (err) => reject(new CliError('HelmFailed', `cannot run ${helm}: ${err.message}`, { cause: err })));
    proc.on('close', (code) => {
      if (code === 0) resolve();
      else reject(new CliError('HelmFailed', `helm ${args[0]} failed (exit ${code}): ${tail.slice(-5).join(' / ')}`));
    });
  });
}
