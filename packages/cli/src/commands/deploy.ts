/**
 * @module commands/deploy
 * `opkit deploy [--image IMAGE] [--dir DIR]`: applies the namespace, CRDs, RBAC and the manager Deployment (with the
 * image substituted — no sed) by server-side apply with opkit's own client; kubectl is not needed. Every object's name
 * is checked against the API server's rules before anything is applied, so a bad name never leaves half a deployment;
 * then the cluster is checked (preflight.ts): every kind served or defined by the CRDs being applied, every namespace
 * there or created — else nothing is written, and the error names each missing kind, its file and what to install
 * (cert-manager, or the chart's self-managed certificate mode). A write that still fails part-way (a Forbidden, say)
 * names what was applied before it.
 * `opkit undeploy`: deletes them again, last first (the CRDs, and so every custom resource, included).
 * Both use the given or current kubeconfig only: a cluster that does not answer is an error naming it, never a reason
 * to switch to another (such as `opkit env up`'s). With `--helm`, the CRDs are applied the same way (Helm never
 * upgrades a chart's crds/) and the rest goes in as a Helm release (see commands/deploy-helm.ts); what the chart
 * renders for the given values is checked the same way before the CRDs are applied or helm runs.
 */
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { KubeObject } from '@opkit/runtime';
import { Applier, Client, loadConfig } from '@opkit/runtime/client';
import { resolveHelm } from '@opkit/testenv';
import { CliError } from '../errors.ts';
import { generatedFiles, installObjects, type LoadedApi, loadApis } from '../generate/manifests.ts';
import { applyReporting, clusterView, configSources, preflight, type Sourced, sourceKey } from '../preflight.ts';
import { checkImage, nameProblems } from '../project/names.ts';
import { PROJECT_FILE, type Project, readProject } from '../project/project.ts';
import { helmDeploy } from './deploy-helm.ts';
import { currentCluster } from './run-cluster.ts';

export const DEPLOY_HELP = `Usage: opkit deploy [--helm] [--image IMAGE] [--dir DIR] [--kubeconfig FILE] [-- HELM ARGS]
       opkit undeploy [--helm] [--dir DIR] [--kubeconfig FILE]

deploy: applies the namespace, CRDs, RBAC and Deployment (image substituted) by server-side apply, after checking
that the cluster serves every kind (cert-manager's, for a project with webhooks) and has every namespace: otherwise
nothing is applied, and the error names what is missing and what to install.
undeploy: deletes them (the CRDs, and so their custom resources, too).
--helm: install (helm upgrade --install) or uninstall the project's Helm chart as the release <projectName> in the
project's namespace; arguments after -- go to helm (-f values.yaml, --set key=value, --wait); what the chart renders
for those values is checked the same way first. helm: $OPKIT_HELM, the one on the PATH, or one built once from Go
modules into the user cache.
`;

/** How to deploy a project with webhooks without cert-manager (the chart's self-managed certificate mode). */
const SELF_MANAGED = '--set certManager.enabled=false --set webhook.certificates=selfManaged';
const WITHOUT_CERT_MANAGER =
  `opkit deploy --helm -- ${SELF_MANAGED} (the operator then makes its own certificates; its main.ts must run the ` +
  'self-managed mode: see docs/webhooks.md and docs/helm.md)';
const HELM_WITHOUT_CERT_MANAGER =
  `add -- ${SELF_MANAGED} (the operator makes its own certificates; its main.ts must run the self-managed mode), or ` +
  'webhook.certificates=external with a Secret of yours: see docs/helm.md';

function parseDeployArgs(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      helm: { type: 'boolean', default: false },
      image: { type: 'string' },
      dir: { type: 'string', default: '.' },
      kubeconfig: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
}

/** What a deploy or undeploy works on, once the project is loaded and the cluster's client made. */
interface DeployContext {
  readonly project: Project;
  readonly apis: readonly LoadedApi[];
  readonly image: string;
  /** The objects of dist/install.yaml, with the image. */
  readonly objects: readonly KubeObject[];
  readonly client: Client;
  readonly applier: Applier;
  readonly server: string;
  /** An object with the config/ file it comes from, for the check's messages. */
  readonly sourced: (o: KubeObject) => Sourced;
  readonly out: (line: string) => void;
}

/** The install's objects for `image`, refused (nothing written) when the API server would refuse a name. */
function deployObjects(dir: string, project: Project, apis: readonly LoadedApi[], image: string, remove: boolean) {
  const objects = installObjects(project, apis, image);
  const problems = nameProblems(objects);
  if (problems.length > 0) {
    throw new CliError(
      'Usage',
      `nothing was ${remove ? 'deleted' : 'applied'}: the API server would refuse ${problems.join('; ')} — ` +
        `fix projectName or namespace in ${join(dir, PROJECT_FILE)}, then run opkit generate`,
    );
  }
  return objects;
}

/** The check's options for this deployment (see preflight.ts). */
const checkOptions = (d: DeployContext) => ({
  defaultNamespace: d.client.defaultNamespace,
  server: d.server,
  withoutCertManager: WITHOUT_CERT_MANAGER,
});

/** `opkit deploy --helm` / `opkit undeploy --helm`: the CRDs applied by opkit after the check, the rest by helm. */
async function deployWithHelm(
  d: DeployContext,
  options: { kubeconfig: string | undefined; helmArgs: readonly string[]; remove: boolean },
) {
  const { project, out } = d;
  const crds = d.objects.filter((o) => o.kind === 'CustomResourceDefinition');
  let applied: string[] = [];
  try {
    await helmDeploy({
      ...options,
      project,
      apis: d.apis,
      image: d.image,
      helm: await resolveHelm({ log: out }),
      out,
      // what the chart renders is checked first; then the CRDs (Helm installs crds/ once and never upgrades
      // them: opkit applies them, so a new field reaches the cluster), then helm installs the rest
      beforeInstall: async (rendered) => {
        await preflight(clusterView(d.client), [...crds.map(d.sourced), ...rendered], {
          ...checkOptions(d),
          defaultNamespace: project.namespace,
          createdNamespaces: [project.namespace],
          withoutCertManager: HELM_WITHOUT_CERT_MANAGER,
        });
        applied = await applyReporting(d.applier, crds, (crd) =>
          out(`applied CustomResourceDefinition ${crd.metadata.name} (server-side apply, before helm)`),
        );
      },
    });
  } catch (err) {
    if (err instanceof CliError && err.code === 'HelmFailed' && applied.length > 0) {
      throw new CliError(
        'PartiallyApplied',
        `${err.message}; before helm ran, opkit had applied (and left in the cluster): ${applied.join(', ')}; ` +
          `what helm wrote is in its release (helm status ${project.projectName} -n ${project.namespace}; ` +
          'opkit undeploy --helm removes it)',
        { cause: err },
      );
    }
    throw err;
  }
}

/** `opkit deploy`: the check, then every object by server-side apply; `opkit undeploy`: every object deleted. */
async function deployObjectsToCluster(d: DeployContext, remove: boolean): Promise<void> {
  const { project, out } = d;
  if (remove) {
    const n = await d.applier.deleteAll(d.objects);
    out(`deleted ${n} object(s) of ${project.projectName} from ${d.server}`);
    return;
  }
  await preflight(clusterView(d.client), d.objects.map(d.sourced), checkOptions(d));
  await applyReporting(d.applier, d.objects, (o) =>
    out(`applied ${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`),
  );
  out(`deployed ${project.projectName} (${d.image}) to ${d.server}`);
}

/** `opkit deploy` / `opkit undeploy` (`remove`), with or without `--helm` (see the module comment). */
export async function deployCommand(
  argv: readonly string[],
  out: (line: string) => void,
  remove: boolean,
): Promise<number> {
  const { values, positionals } = parseDeployArgs(argv);
  if (values.help) {
    out(DEPLOY_HELP);
    return 0;
  }
  const dir = resolve(values.dir);
  const project = await readProject(dir);
  const image = checkImage(values.image ?? project.image);
  const apis = await loadApis(dir, project);
  const objects = deployObjects(dir, project, apis, image, remove);
  if (positionals.length > 0 && !values.helm) {
    throw new CliError('Usage', `unexpected argument ${positionals[0]}: arguments after -- are for helm (with --helm)`);
  }
  const target = await currentCluster(values.kubeconfig);
  const client = new Client(await loadConfig(target.path ? { path: target.path } : {}), { name: 'opkit' });
  try {
    let sources: Map<string, string> | undefined; // the config/ file of each object, for the check's messages
    const sourced = (o: KubeObject) => {
      sources ??= configSources(generatedFiles(project, apis));
      return { object: o, source: sources.get(sourceKey(o)) ?? 'dist/install.yaml' };
    };
    const applier = new Applier(client, 'opkit');
    const d: DeployContext = { project, apis, image, objects, client, applier, server: target.server, sourced, out };
    if (values.helm) await deployWithHelm(d, { kubeconfig: values.kubeconfig, helmArgs: positionals, remove });
    else await deployObjectsToCluster(d, remove);
  } finally {
    client.close();
  }
  return 0;
}
