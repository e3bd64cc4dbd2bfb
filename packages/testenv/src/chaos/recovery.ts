/**
 * @module chaos/recovery
 * Waits until the control plane has recovered from an apiserver restart, so that what a step is judged on afterwards
 * is the operator's recovery, not the built-in controllers': every CRD is served again (discovery), the
 * controller-manager is restarted once they are (its garbage collector maps the custom kinds from discovery, and
 * one that resynced while they were missing could not tell a custom owner is gone for tens of seconds), and a canary
 * pod in a namespace of its own is scheduled, made Ready by its node and, once deleted, removed: the scheduler and
 * kwok resumed their watches.
 *
 * Guarantees: resolves once all of that was seen, or after `timeoutMs` (default 60 s) whatever was not; it never
 * touches the operator's namespaces or objects. The canary's namespace (`chaos-canary`) is created once per system.
 */
import type { Environment } from '../environment.ts';
import { waitFor } from '../wait.ts';

const CANARY_NAMESPACE = 'chaos-canary';

interface Crd {
  readonly spec: {
    readonly group: string;
    readonly names: { readonly plural: string };
    readonly versions: readonly { readonly name: string; readonly served?: boolean }[];
  };
}

/** Polls `check` until it holds or `deadline` passes (testenv's `waitFor`); whether it held. */
const until = (deadline: number, check: () => Promise<boolean>): Promise<boolean> =>
  waitFor('the control plane to recover', check, Math.max(0, deadline - Date.now()), 200).then(
    () => true,
    () => false,
  );

/** Whether the apiserver serves every version of every CRD it has. */
async function crdsServed(env: Environment): Promise<boolean> {
  const crds = await env.api.must<{ items: Crd[] }>({
    path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
  });
  // each group version's discovery document once, for every CRD of it
  const served = new Map<string, Promise<readonly string[] | undefined>>();
  const resourcesOf = (path: string) => {
    let got = served.get(path);
    if (got === undefined) {
      got = env.api
        .request<{ resources?: { name: string }[] }>({ path })
        .then((res) => (res.status === 200 ? (res.body.resources ?? []).map((r) => r.name) : undefined));
      served.set(path, got);
    }
    return got;
  };
  for (const { spec } of crds.items)
    for (const v of spec.versions.filter((x) => x.served !== false))
      if (!(await resourcesOf(`/apis/${spec.group}/${v.name}`))?.includes(spec.names.plural)) return false;
  return true;
}

/** A pod on the kwok node: scheduled, made Ready, then deleted and removed. */
async function canary(env: Environment, deadline: number): Promise<boolean> {
  const { api } = env;
  await api.request({
    method: 'POST',
    path: '/api/v1/namespaces',
    body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: CANARY_NAMESPACE } },
  });
  const pods = `/api/v1/namespaces/${CANARY_NAMESPACE}/pods`;
  const name = `canary-${Date.now().toString(36)}`;
  const created = await api.request({
    method: 'POST',
    path: pods,
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: { containers: [{ name: 'canary', image: 'registry.example/canary:1' }] },
    },
  });
  if (created.status >= 300) return false;
  type Pod = { status?: { conditions?: { type: string; status: string }[] } };
  const ready = await until(deadline, async () => {
    const res = await api.request<Pod>({ path: `${pods}/${name}` });
    return res.body.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
  });
  await api.request({ method: 'DELETE', path: `${pods}/${name}` });
  const gone = await until(deadline, async () => (await api.request({ path: `${pods}/${name}` })).status === 404);
  return ready && gone;
}

/** Waits until the control plane recovered from an apiserver restart (see the module comment). */
export async function controlPlaneRecovered(env: Environment, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  await until(deadline, () => crdsServed(env));
  await env.restart('kube-controller-manager');
  await until(deadline, () => canary(env, deadline));
}
