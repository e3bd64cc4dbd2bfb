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
import { generatedFiles, installObjects, loadApis } from '../generate/manifests.ts';
import { applyReporting, clusterView, configSources, preflight, sourceKey } from '../preflight.ts';
import { checkImage, nameProblems } from '../project/names.ts';
import { PROJECT_FILE, readProject } from '../project/project.ts';
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

export async function deployCommand(
  argv: readonly string[],
  out: (line: string) => void,
  remove: boolean,
): Promise<number> {
  const { values, positionals } = parseArgs({
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
  if (values.help) {
    out(DEPLOY_HELP);
    return 0;
  }
  const dir = resolve(values.dir);
  const project = await readProject(dir);
  const image = checkImage(values.image ?? project.image);
  const apis = await loadApis(dir, project);
  const objects = installObjects(project, apis, image);
  const problems = nameProblems(objects);
  if (problems.length > 0) {
    throw new CliError(
      'Usage',
      `nothing was ${remove ? 'deleted' : 'applied'}: the API server would refuse ${problems.join('; ')} — ` +
        `fix projectName or namespace in ${join(dir, PROJECT_FILE)}, then run opkit generate`,
    );
  }
  if (positionals.length > 0 && !values.helm) {
    throw new CliError('Usage', `unexpected argument ${positionals[0]}: arguments after -- are for helm (with --helm)`);
  }
  const target = await currentCluster(values.kubeconfig);
  const client = new Client(await loadConfig(target.path ? { path: target.path } : {}), { name: 'opkit' });
  try {
    const applier = new Applier(client, 'opkit');
    let sources: Map<string, string> | undefined; // the config/ file of each object, for the check's messages
    const sourced = (o: KubeObject) => {
      sources ??= configSources(generatedFiles(project, apis));
      return { object: o, source: sources.get(sourceKey(o)) ?? 'dist/install.yaml' };
    };
    const check = {
      defaultNamespace: client.defaultNamespace,
      server: target.server,
      withoutCertManager: WITHOUT_CERT_MANAGER,
    };
    if (values.helm) {
      const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
      let applied: string[] = [];
      try {
        await helmDeploy({
          project,
          apis,
          image,
          kubeconfig: values.kubeconfig,
          helm: await resolveHelm({ log: out }),
          helmArgs: positionals,
          remove,
          out,
          // what the chart renders is checked first; then the CRDs (Helm installs crds/ once and never upgrades
          // them: opkit applies them, so a new field reaches the cluster), then helm installs the rest
          beforeInstall: async (rendered) => {
            await preflight(clusterView(client), [...crds.map(sourced), ...rendered], {
              ...check,
              defaultNamespace: project.namespace,
              createdNamespaces: [project.namespace],
              withoutCertManager: HELM_WITHOUT_CERT_MANAGER,
            });
            applied = await applyReporting(applier, crds, (crd) =>
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
    } else if (remove) {
      const n = await applier.deleteAll(objects);
      out(`deleted ${n} object(s) of ${project.projectName} from ${target.server}`);
    } else {
      await preflight(clusterView(client), objects.map(sourced), check);
      await applyReporting(applier, objects, (o) =>
        out(`applied ${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`),
      );
      out(`deployed ${project.projectName} (${image}) to ${target.server}`);
    }
  } finally {
    client.close();
  }
  return 0;
}
