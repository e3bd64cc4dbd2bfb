import { Defaulted, defineKind, done, Manager, type ObjectOf, permission, settings } from '@opkit/runtime';
import { Deployments } from '@opkit/runtime/kinds';
import { Type } from '@sinclair/typebox';

// The API: one TypeBox schema is both the CRD (validated by the apiserver) and the TypeScript types.
export const Websites = defineKind({
  group: 'example.com',
  version: 'v1',
  kind: 'Website',
  plural: 'websites',
  spec: Type.Object({
    image: Type.String({ minLength: 1 }),
    replicas: Defaulted(Type.Integer({ minimum: 0, format: 'int32' }), 1),
  }),
  status: Type.Object({ readyReplicas: Type.Optional(Type.Integer({ format: 'int32' })) }),
  subresources: { status: true },
});
export type Website = ObjectOf<typeof Websites>;

// Everything the controller does with the API: `opkit generate` writes exactly this as its RBAC.
export const permissions = [
  permission(Websites, ['list', 'watch']),
  permission(Websites, ['patch', 'update'], { subresource: 'status' }),
  permission(Deployments, ['list', 'watch', 'create', 'patch']),
];

// Level-triggered: whatever woke it (the Website or its Deployment changed), make the Deployment match the spec and
// report what runs. ctx.apply makes the Website the Deployment's owner; ctx.status writes only what changed.
export function setup(mgr: Manager): void {
  mgr
    .controller(Websites)
    .owns(Deployments)
    .reconcile(async (site, ctx) => {
      const name = site.metadata.name ?? '';
      const deployment = await ctx.apply(Deployments, {
        metadata: { name },
        spec: {
          replicas: site.spec.replicas,
          selector: { matchLabels: { app: name } },
          template: {
            metadata: { labels: { app: name } },
            spec: { containers: [{ name: 'web', image: site.spec.image }] },
          },
        },
      });
      await ctx.status({ readyReplicas: deployment.status?.readyReplicas ?? 0 });
      return done();
    });
}

// The operator process: flags and environment (--help), the cluster of KUBECONFIG or in-cluster, until SIGTERM.
if (import.meta.main) {
  const mgr = await Manager.create(settings({ name: 'website-operator' }).manager);
  setup(mgr);
  await mgr.run();
}
