/**
 * @module chaos/security
 * Least privilege and hygiene, measured: Forbidden answers to the operator and granted permissions it never used
 * (audit log vs its Roles), its Deployment admitted where Pod Security `restricted` is enforced, no token in its
 * output, and `npm audit` of the production dependencies.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type ApiError, type KubeObject, type Permission, permission } from '@opkit/runtime';
import type { Client } from '@opkit/runtime/client';
import { metricsAuthPermissions } from '@opkit/runtime/helpers';
import {
  type Deployment,
  Deployments,
  EventsV1Events,
  Namespaces,
  type Pod,
  Pods,
  ServiceAccounts,
} from '@opkit/runtime/kinds';
import type { AuditEvent } from '@opkit/testenv';
import { installObjects, NAME } from '../src/install.ts';
import { forbidden, inWindows, type Rule, unusedPermissions } from './audit.ts';

export interface SecurityReport {
  readonly forbidden: number;
  readonly forbiddenRequests: string[];
  /** 403s answered while the apiserver was restarting (its authorizer not yet loaded): not about the RBAC. */
  readonly forbiddenWhileApiserverRestarted: number;
  readonly unusedPermissions: string[];
  readonly restrictedAdmission: { readonly admitted: boolean; readonly detail: string };
  readonly secretsLogged: string[];
  readonly npmAudit: { readonly status: 'clean' | 'findings' | 'unavailable'; readonly detail: string };
}

/**
 * Grants the replicas here use only on demand, so a trial may not exercise them; each has its own test:
 * - the metrics reviews (TokenReview, SubjectAccessReview): made when a scrape carries a token, and the replicas run
 *   with metrics off (packages/runtime/test/metricsauth.test.ts exercises them);
 * - `patch` on events.k8s.io Events: a series count, made only when an Event repeats within six minutes
 *   (packages/runtime/test/manager.test.ts "events: …").
 */
const ON_DEMAND: readonly Permission[] = [...metricsAuthPermissions(), permission(EventsV1Events, ['patch'])];

/**
 * The rules granted to the operator's ServiceAccount, less the grants used only on demand (ON_DEMAND). The replicas
 * serve the webhooks here, so the webhooks' grants (src/webhooks.ts `permissions`) count like the controllers'.
 */
export async function grantedRules(): Promise<Rule[]> {
  const exempt = ON_DEMAND;
  const covered = (group: string, resource: string, verb: string) =>
    exempt.some((p) => p.group === group && p.resource === resource && (p.verbs as readonly string[]).includes(verb));
  return (await boundRules()).flatMap((r) =>
    r.apiGroups.flatMap((group) =>
      r.resources.flatMap((resource) => {
        const verbs = r.verbs.filter((verb) => !covered(group, resource, verb));
        return verbs.length > 0 ? [{ apiGroups: [group], resources: [resource], verbs }] : [];
      }),
    ),
  );
}

async function boundRules(): Promise<Rule[]> {
  const objects = await installObjects();
  const bound = new Set(
    objects
      .filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')
      .map((b) => b as KubeObject & { roleRef: { kind: string; name: string }; subjects?: { name: string }[] })
      .filter((b) => b.subjects?.some((s) => s.name === NAME))
      .map((b) => `${b.roleRef.kind}/${b.roleRef.name}`),
  );
  return objects
    .filter((o) => bound.has(`${o.kind}/${o.metadata.name}`))
    .flatMap((o) => (o as KubeObject & { rules: Rule[] }).rules);
}

export async function securityReport(
  admin: Client,
  events: readonly AuditEvent[],
  leaks: readonly string[],
  restartWindows: readonly (readonly [number, number])[],
): Promise<SecurityReport> {
  const during = (e: AuditEvent) => inWindows(Date.parse(e.requestReceivedTimestamp ?? ''), restartWindows);
  const all = forbidden(events);
  const denied = all.filter((e) => !during(e));
  return {
    forbidden: denied.length,
    forbiddenWhileApiserverRestarted: all.length - denied.length,
    forbiddenRequests: [
      ...new Set(
        denied.map(
          (e) => `${e.verb} ${e.objectRef?.resource}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`,
        ),
      ),
    ],
    unusedPermissions: unusedPermissions(events, await grantedRules()),
    restrictedAdmission: await restrictedAdmission(admin),
    secretsLogged: [...leaks],
    npmAudit: npmAudit(),
  };
}

/**
 * The operator's Deployment, from the install manifests, in a namespace that enforces Pod Security `restricted`: a
 * dry-run pod from its template must be admitted, and the Deployment must get all its pods created.
 */
async function restrictedAdmission(admin: Client): Promise<SecurityReport['restrictedAdmission']> {
  const ns = 'psa-restricted';
  await admin.create(Namespaces, {
    metadata: {
      name: ns,
      labels: {
        'pod-security.kubernetes.io/enforce': 'restricted',
        'pod-security.kubernetes.io/enforce-version': 'latest',
      },
    },
  });
  await admin.create(ServiceAccounts, { metadata: { name: NAME, namespace: ns } });
  const deployment = structuredClone(
    (await installObjects()).find((o) => o.kind === 'Deployment') as unknown as Deployment,
  );
  deployment.metadata = { ...deployment.metadata, namespace: ns };
  delete deployment.metadata.resourceVersion;
  const template = deployment.spec?.template;
  try {
    await admin.create(
      Pods,
      {
        metadata: { generateName: 'psa-check-', namespace: ns, labels: template?.metadata?.labels },
        spec: template?.spec,
      } as Pod,
      { dryRun: true },
    );
  } catch (err) {
    return { admitted: false, detail: `a pod from its template was refused: ${(err as Error).message}` };
  }
  await admin.create(Deployments, deployment);
  const want = deployment.spec?.replicas ?? 1;
  const t0 = performance.now();
  while (performance.now() - t0 < 60_000) {
    const pods = (await admin.list(Pods, { namespace: ns })).items;
    if (pods.length >= want)
      return { admitted: true, detail: `${pods.length}/${want} pods created under enforce=restricted` };
    await new Promise((r) => setTimeout(r, 500));
  }
  const d = await admin
    .get(Deployments, { namespace: ns, name: deployment.metadata.name as string })
    .catch((e: ApiError) => e);
  return {
    admitted: false,
    detail: `no pods after 60 s: ${JSON.stringify((d as Deployment).status?.conditions ?? d)}`,
  };
}

/** `npm audit --omit=dev` at the repository root: high or critical findings fail; an unreachable service is said so. */
function npmAudit(): SecurityReport['npmAudit'] {
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const r = spawnSync('npm', ['audit', '--omit=dev', '--json'], { cwd: root, encoding: 'utf8', timeout: 120_000 });
  try {
    const report = JSON.parse(r.stdout) as {
      metadata?: { vulnerabilities?: Record<string, number> };
      error?: { summary?: string };
      message?: string;
    };
    const v = report.metadata?.vulnerabilities;
    if (!v)
      return {
        status: 'unavailable',
        detail: `the registry's audit service did not answer: ${report.error?.summary || report.message || r.stderr.split('\n')[0] || 'no report'}`,
      };
    const bad = (v.high ?? 0) + (v.critical ?? 0);
    const detail = Object.entries(v)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    return { status: bad > 0 ? 'findings' : 'clean', detail };
  } catch {
    return {
      status: 'unavailable',
      detail: (r.stderr || r.stdout).split('\n').find((l) => l.trim()) ?? `exit ${r.status}`,
    };
  }
}
