/**
 * @module test/volumes-by-hand
 * WORKAROUND until testenv provisions volumes (issue 28, i28-vol): when the cluster has no default StorageClass,
 * binds every pending PVC to a hostPath PV made for it, as the PV controller would (the PV's claimRef, the PVC's
 * volumeName and bind-completed annotation, both Bound), so StatefulSet pods can be scheduled.
 */
import { Client, loadConfig } from '@opkit/runtime/client';
import { PersistentVolumeClaims } from '@opkit/runtime/kinds';
import type { Environment } from '@opkit/testenv';

export async function bindVolumesByHand(env: Environment): Promise<{ stop(): Promise<void> }> {
  const client = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'volumes-by-hand' });
  const classes = await env.api.request({ path: '/apis/storage.k8s.io/v1/storageclasses' });
  const hasDefault = JSON.stringify(classes.body).includes('storageclass.kubernetes.io/is-default-class');
  let running = !hasDefault;
  const loop = (async () => {
    while (running) {
      for (const pvc of (await client.list(PersistentVolumeClaims)).items) {
        if (pvc.spec?.volumeName || pvc.metadata.deletionTimestamp) continue;
        const name = `pv-${pvc.metadata.uid}`;
        const storage = pvc.spec?.resources?.requests?.storage ?? '1Gi';
        const claimRef = { namespace: pvc.metadata.namespace, name: pvc.metadata.name, uid: pvc.metadata.uid };
        await env.api.request({
          method: 'POST',
          path: '/api/v1/persistentvolumes',
          body: {
            apiVersion: 'v1',
            kind: 'PersistentVolume',
            metadata: { name },
            spec: {
              capacity: { storage },
              accessModes: pvc.spec?.accessModes,
              hostPath: { path: `/tmp/${name}` },
              claimRef,
            },
          },
        });
        await env.api.request({
          method: 'PATCH',
          path: `/api/v1/persistentvolumes/${name}/status`,
          body: { status: { phase: 'Bound' } },
        });
        const ref = { namespace: pvc.metadata.namespace ?? '', name: pvc.metadata.name ?? '' };
        await client.patch(PersistentVolumeClaims, ref, {
          metadata: { annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } },
          spec: { volumeName: name },
        });
        await env.api.request({
          method: 'PATCH',
          path: `/api/v1/namespaces/${ref.namespace}/persistentvolumeclaims/${ref.name}/status`,
          body: { status: { phase: 'Bound', capacity: { storage } } },
        });
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })().catch(() => {});
  return {
    async stop() {
      running = false;
      await loop;
      client.close();
    },
  };
}
