/**
 * @module commands/deploy-helm
 * `opkit deploy --helm`: installs or upgrades the project's Helm chart, made afresh from the code (generate/helm.ts)
 * into a temporary directory, as the release `<projectName>` in the project's namespace (created when missing), with
 * the image substituted: `helm upgrade --install`. Arguments after `--` go to helm as they are (`-f values.yaml`,
 * `--set …`, `--wait`). `opkit undeploy --helm`: `helm uninstall` of that release; Helm leaves the CRDs (and so the
 * custom resources) in place, as it always does for `crds/`.
 *
 * Before `helm upgrade --install`, the chart is rendered with the same values (`helm template --include-crds`, the
 * image and the value flags after `--`: `-f`/`--values`, `--set`, `--set-string`, `--set-file`, `--set-json`,
 * `--set-literal`, `--post-renderer`, `--post-renderer-args`) and the objects are handed to the caller's
 * `beforeInstall` (opkit deploy checks them against the cluster, then applies the CRDs), so nothing is written — by
 * opkit or helm — for a chart the cluster cannot take. A chart that does not render fails here too.
 *
 * helm is `$OPKIT_HELM`, else the one on the PATH, else the pinned helm built once from Go modules into the user
 * cache (see @opkit/testenv's helm.ts). helm's output is passed on line by line (the rendering is read, not
 * printed); a helm failure is a `CliError` with helm's last lines, and the temporary chart is removed in every case.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { CliError } from '../errors.ts';
import { CHART_DIR, chartFiles, splitImage } from '../generate/helm.ts';
import type { LoadedApi } from '../generate/manifests.ts';
import { renderedObjects, type Sourced } from '../preflight.ts';
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
  /** Called with what the chart renders for these values, before helm installs anything; its rejection stops the deploy. */
  readonly beforeInstall?: (rendered: readonly Sourced[]) => Promise<void>;
}

/** The value flags of `helmArgs` (both `--flag value` and `--flag=value`, `-f file` and `-ffile`), for helm template. */
export function valueArgs(helmArgs: readonly string[]): string[] {
  const withValue = [
    '-f',
    '--values',
    '--set',
    '--set-string',
    '--set-file',
    '--set-json',
    '--set-literal',
    '--post-renderer',
    '--post-renderer-args',
  ];
  const out: string[] = [];
  for (let i = 0; i < helmArgs.length; i++) {
    const arg = helmArgs[i] as string;
    if (withValue.includes(arg)) {
      const next = helmArgs[i + 1];
      if (next !== undefined) out.push(arg, next);
      i++;
    } else if (withValue.some((f) => arg.startsWith(`${f}=`)) || (arg.startsWith('-f') && !arg.startsWith('--'))) {
      out.push(arg);
    }
  }
  return out;
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
    const image = [
      '--set-string',
      `image.repository=${repository}`,
      '--set-string',
      `image.tag=${tag}`,
      '--set-string',
      `image.digest=${digest}`,
    ];
    if (o.beforeInstall) {
      const rendered = await runHelm(
        o.helm,
        [
          'template',
          release,
          chart,
          '--namespace',
          o.project.namespace,
          '--include-crds',
          ...image,
          ...valueArgs(o.helmArgs),
        ],
        undefined,
      );
      await o.beforeInstall(renderedObjects(rendered, CHART_DIR));
    }
    await runHelm(
      o.helm,
      ['upgrade', '--install', release, chart, ...common, '--create-namespace', ...image, ...o.helmArgs],
      o.out,
    );
    o.out(`deployed ${release} (${o.image}) with Helm as the release ${release} in ${o.project.namespace}`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Runs helm; with `out`, passes its output on line by line, else collects stdout and returns it. */
function runHelm(helm: string, args: string[], out: ((line: string) => void) | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn(helm, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const tail: string[] = [];
    let stdout = '';
    const lines = (chunk: string) => {
      for (const line of chunk.split('\n')) {
        if (!line.trim()) continue;
        out?.(line);
        tail.push(line);
        if (tail.length > 20) tail.shift();
      }
    };
    if (out) proc.stdout.setEncoding('utf8').on('data', lines);
    else
      proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
      });
    proc.stderr.setEncoding('utf8').on('data', lines);
    proc.on('error', (err) => reject(new CliError('HelmFailed', `cannot run ${helm}: ${err.message}`, { cause: err })));
    proc.on('close', (code) => {
      if (code === 0) resolve(stdout);
      else reject(new CliError('HelmFailed', `helm ${args[0]} failed (exit ${code}): ${tail.slice(-5).join(' / ')}`));
    });
  });
}
