/**
 * @module commands/deploy
 * `opkit deploy [--image IMAGE] [--dir DIR]`: applies the namespace, CRDs, RBAC and the manager Deployment (with the
 * image substituted — no sed) by server-side apply with opkit's own client; kubectl is not needed. Every object's name
 * is checked against the API server's rules before anything is applied, so a bad name never leaves half a deployment.
 * `opkit undeploy`: deletes them again, last first (the CRDs, and so every custom resource, included).
 * Both use the given or current kubeconfig only: a cluster that does not answer is an error naming it, never a reason
 * to switch to another (such as `opkit env up`'s). With `--helm`, the CRDs are applied the same way (Helm never
 * upgrades a chart's crds/) and the rest goes in as a Helm release (see commands/deploy-helm.ts).
 */
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Applier, Client, loadConfig } from '@opkit/runtime/client';
import { resolveHelm } from '@opkit/testenv';
import { CliError } from '../errors.ts';
import { installObjects, loadApis } from '../generate/manifests.ts';
import { checkImage, nameProblems } from '../project/names.ts';
import { PROJECT_FILE, readProject } from '../project/project.ts';
import { helmDeploy } from './deploy-helm.ts';
import { reachableKubeconfig } from './run-operator.ts';

export const DEPLOY_HELP = `Usage: opkit deploy [--helm] [--image IMAGE] [--dir DIR] [--kubeconfig FILE] [-- HELM ARGS]
       opkit undeploy [--helm] [--dir DIR] [--kubeconfig FILE]

deploy: applies the namespace, CRDs, RBAC and Deployment (image substituted) by server-side apply.
undeploy: deletes them (the CRDs, and so their custom resources, too).
--helm: install (helm upgrade --install) or uninstall the project's Helm chart as the release <projectName> in the
project's namespace; arguments after -- go to helm (-f values.yaml, --set key=value, --wait). helm: $OPKIT_HELM, the
one on the PATH, or one built once from Go modules into the user cache.
`;

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
  const target = await reachableKubeconfig(values.kubeconfig, { fallback: false });
  const client = new Client(await loadConfig(target.path ? { path: target.path } : {}), { name: 'opkit' });
  try {
    const applier = new Applier(client, 'opkit');
    if (values.helm) {
      // Helm installs crds/ once and never upgrades them: apply the CRDs first, so a new field reaches the cluster
      if (!remove) {
        for (const crd of await applier.applyAll(objects.filter((o) => o.kind === 'CustomResourceDefinition'))) {
          out(`applied CustomResourceDefinition ${crd.metadata.name} (server-side apply, before helm)`);
        }
      }
      await helmDeploy({
        project,
        apis,
        image,
        kubeconfig: values.kubeconfig,
        helm: await resolveHelm({ log: out }),
        helmArgs: positionals,
        remove,
        out,
      });
    } else if (remove) {
      const n = await applier.deleteAll(objects);
      out(`deleted ${n} object(s) of ${project.projectName} from ${target.server}`);
    } else {
      await applier.applyAll(objects);
      for (const o of objects)
        out(`applied ${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`);
      out(`deployed ${project.projectName} (${image}) to ${target.server}`);
    }
  } finally {
    client.close();
  }
  return 0;
}
