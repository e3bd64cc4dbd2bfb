import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { access } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Environment, HOST_PATH_PROVISIONER, STORAGE_CLASSES, start } from '../src/index.ts';
import { alive, quiet, waitFor } from './helpers.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/start-with-volume.ts', import.meta.url));

interface Meta {
  name: string;
  namespace?: string;
  uid?: string;
  annotations?: Record<string, string>;
  ownerReferences?: { kind: string; name: string }[];
}
interface Claim {
  metadata: Meta;
  spec: { volumeName?: string; storageClassName?: string };
  status?: { phase?: string };
}
interface Volume {
  metadata: Meta;
  spec: { hostPath?: { path: string }; claimRef?: { namespace: string; name: string }; storageClassName?: string };
  status?: { phase?: string };
}
interface StorageClass {
  metadata: Meta;
  provisioner: string;
  volumeBindingMode: string;
  reclaimPolicy: string;
}

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

describe('volumes: PV controllers and the host-path provisioner', () => {
  let env: Environment;
  before(async () => {
    env = await start({ nodes: 1, log: quiet });
  });
  after(async () => {
    await env?.stop();
  });

  const claimsPath = (ns: string) => `/api/v1/namespaces/${ns}/persistentvolumeclaims`;
  const getClaim = async (ns: string, name: string) => {
    const res = await env.api.request<Claim>({ path: `${claimsPath(ns)}/${name}` });
    return res.status === 200 ? res.body : undefined;
  };
  const getVolume = async (name: string) => {
    const res = await env.api.request<Volume>({ path: `/api/v1/persistentvolumes/${name}` });
    return res.status === 200 ? res.body : undefined;
  };
  const gone = async (path: string) => (await env.api.request({ path })).status === 404;
  /** Waits until the claim is Bound to a provisioned PV whose directory exists; returns that PV. */
  const boundVolume = async (ns: string, name: string): Promise<Volume> => {
    const claim = await waitFor(`PVC ${ns}/${name} Bound`, async () => {
      const c = await getClaim(ns, name);
      return c?.status?.phase === 'Bound' && c.spec.volumeName ? c : undefined;
    });
    const pv = await waitFor(`the PV of ${ns}/${name} Bound`, async () => {
      const v = await getVolume(claim.spec.volumeName ?? '');
      return v?.status?.phase === 'Bound' ? v : undefined;
    });
    assert.equal(pv.metadata.annotations?.['pv.kubernetes.io/provisioned-by'], HOST_PATH_PROVISIONER);
    assert.equal(`${pv.spec.claimRef?.namespace}/${pv.spec.claimRef?.name}`, `${ns}/${name}`);
    assert.match(pv.spec.hostPath?.path ?? '', /^\/tmp\/hostpath_pv\/[0-9a-f-]{36}$/);
    assert.ok(await exists(pv.spec.hostPath?.path ?? ''), 'the provisioned directory exists');
    return pv;
  };
  const createNamespace = (name: string) =>
    env.api.must({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name } } });
  const createClaim = (ns: string, name: string, storageClassName: string) =>
    env.api.must({
      method: 'POST',
      path: claimsPath(ns),
      body: {
        metadata: { name },
        spec: { storageClassName, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      },
    });

  // Independent tests (one namespace each) run at once: a namespace holding a PVC takes the namespace controller
  // about 9 s to delete (it requeues after half its 15 s estimate for objects with finalizers).
  describe('in their own namespaces', { concurrency: true }, () => {
    test('two StorageClasses: standard (default, WaitForFirstConsumer) and standard-immediate (Immediate)', async () => {
      const list = await env.api.must<{ items: StorageClass[] }>({ path: '/apis/storage.k8s.io/v1/storageclasses' });
      const byName = new Map(list.items.map((c) => [c.metadata.name, c]));
      const standard = byName.get(STORAGE_CLASSES.default);
      const immediate = byName.get(STORAGE_CLASSES.immediate);
      assert.equal(standard?.volumeBindingMode, 'WaitForFirstConsumer');
      assert.equal(standard?.metadata.annotations?.['storageclass.kubernetes.io/is-default-class'], 'true');
      assert.equal(immediate?.volumeBindingMode, 'Immediate');
      assert.notEqual(immediate?.metadata.annotations?.['storageclass.kubernetes.io/is-default-class'], 'true');
      for (const c of [standard, immediate]) {
        assert.equal(c?.provisioner, HOST_PATH_PROVISIONER);
        assert.equal(c?.reclaimPolicy, 'Delete');
      }
    });

    test('a StatefulSet with a volumeClaimTemplate: 3 Ready pods on Bound PVCs; scale down, delete the PVCs, delete the namespace', async () => {
      const ns = 'sts';
      await createNamespace(ns);
      const sts = `/apis/apps/v1/namespaces/${ns}/statefulsets/db`;
      await env.api.must({
        method: 'POST',
        path: `/apis/apps/v1/namespaces/${ns}/statefulsets`,
        body: {
          metadata: { name: 'db' },
          spec: {
            replicas: 3,
            serviceName: 'db',
            selector: { matchLabels: { app: 'db' } },
            template: {
              metadata: { labels: { app: 'db' } },
              spec: {
                terminationGracePeriodSeconds: 0, // else the namespace controller waits 16 s for the pod to end
                containers: [{ name: 'db', image: 'busybox', volumeMounts: [{ name: 'data', mountPath: '/d' }] }],
              },
            },
            volumeClaimTemplates: [
              {
                metadata: { name: 'data' },
                spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
              },
            ],
          },
        },
      });
      await waitFor(
        'StatefulSet db: 3 Ready replicas',
        async () =>
          (await env.api.must<{ status?: { readyReplicas?: number } }>({ path: sts })).status?.readyReplicas === 3,
        60_000,
      );
      const volumes = await Promise.all([0, 1, 2].map((i) => boundVolume(ns, `data-db-${i}`)));
      for (const pv of volumes) assert.equal(pv.spec.storageClassName, STORAGE_CLASSES.default);

      await env.api.must({ method: 'PATCH', path: sts, body: { spec: { replicas: 1 } } });
      await waitFor('pods db-1 and db-2 gone', async () =>
        (await Promise.all([1, 2].map((i) => gone(`/api/v1/namespaces/${ns}/pods/db-${i}`)))).every(Boolean),
      );
      for (const i of [1, 2]) await env.api.must({ method: 'DELETE', path: `${claimsPath(ns)}/data-db-${i}` });
      for (const pv of volumes.slice(1)) {
        await waitFor(`PV ${pv.metadata.name} deleted`, () => gone(`/api/v1/persistentvolumes/${pv.metadata.name}`));
        assert.equal(await exists(pv.spec.hostPath?.path ?? ''), false, 'its directory is removed');
      }
      assert.ok(await getClaim(ns, 'data-db-0'), 'the claim of the remaining pod stays');

      await env.api.must({ method: 'DELETE', path: `/api/v1/namespaces/${ns}` });
      await waitFor('namespace sts gone', () => gone(`/api/v1/namespaces/${ns}`), 60_000);
      const last = volumes[0] as Volume;
      await waitFor(`PV ${last.metadata.name} deleted`, () => gone(`/api/v1/persistentvolumes/${last.metadata.name}`));
      assert.equal(await exists(last.spec.hostPath?.path ?? ''), false);
    });

    test('persistentVolumeClaimRetentionPolicy Delete: the PVCs go when the StatefulSet scales down and when it goes', async () => {
      const ns = 'retention';
      await createNamespace(ns);
      const sts = `/apis/apps/v1/namespaces/${ns}/statefulsets/kv`;
      await env.api.must({
        method: 'POST',
        path: `/apis/apps/v1/namespaces/${ns}/statefulsets`,
        body: {
          metadata: { name: 'kv' },
          spec: {
            replicas: 2,
            serviceName: 'kv',
            persistentVolumeClaimRetentionPolicy: { whenScaled: 'Delete', whenDeleted: 'Delete' },
            selector: { matchLabels: { app: 'kv' } },
            template: {
              metadata: { labels: { app: 'kv' } },
              spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'kv', image: 'busybox' }] },
            },
            volumeClaimTemplates: [
              {
                metadata: { name: 'data' },
                spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
              },
            ],
          },
        },
      });
      const volumes = [await boundVolume(ns, 'data-kv-0'), await boundVolume(ns, 'data-kv-1')];
      await env.api.must({ method: 'PATCH', path: sts, body: { spec: { replicas: 1 } } });
      await waitFor('PVC data-kv-1 deleted on scale-down', () => gone(`${claimsPath(ns)}/data-kv-1`));
      assert.ok(await getClaim(ns, 'data-kv-0'));
      await env.api.must({ method: 'DELETE', path: sts });
      await waitFor('PVC data-kv-0 deleted with the StatefulSet', () => gone(`${claimsPath(ns)}/data-kv-0`));
      for (const pv of volumes) {
        await waitFor(`PV ${pv.metadata.name} deleted`, () => gone(`/api/v1/persistentvolumes/${pv.metadata.name}`));
        assert.equal(await exists(pv.spec.hostPath?.path ?? ''), false);
      }
    });

    test('a PVC of standard-immediate binds without a pod', async () => {
      await createNamespace('immediate');
      await createClaim('immediate', 'alone', STORAGE_CLASSES.immediate);
      await boundVolume('immediate', 'alone');
    });

    test('a PVC of the default class waits for its first consumer', async () => {
      await createNamespace('wait');
      await createClaim('wait', 'later', STORAGE_CLASSES.default);
      await waitFor('an event WaitForFirstConsumer', async () => {
        const events = await env.api.must<{ items: { reason: string }[] }>({
          path: '/api/v1/namespaces/wait/events?fieldSelector=involvedObject.name=later',
        });
        return events.items.some((e) => e.reason === 'WaitForFirstConsumer');
      });
      assert.equal((await getClaim('wait', 'later'))?.status?.phase, 'Pending');
    });

    test('a generic ephemeral volume gets its PVC, owned by the pod', async () => {
      const ns = 'ephemeral';
      await createNamespace(ns);
      await env.api.must({
        method: 'POST',
        path: `/api/v1/namespaces/${ns}/pods`,
        body: {
          metadata: { name: 'job' },
          spec: {
            containers: [{ name: 'c', image: 'busybox', volumeMounts: [{ name: 'scratch', mountPath: '/s' }] }],
            volumes: [
              {
                name: 'scratch',
                ephemeral: {
                  volumeClaimTemplate: {
                    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
                  },
                },
              },
            ],
          },
        },
      });
      const pv = await boundVolume(ns, 'job-scratch');
      const claim = await getClaim(ns, 'job-scratch');
      assert.deepEqual(
        claim?.metadata.ownerReferences?.map((o) => `${o.kind}/${o.name}`),
        ['Pod/job'],
      );
      await waitFor('pod job Running', async () => {
        const pod = await env.api.must<{ status?: { phase?: string } }>({ path: `/api/v1/namespaces/${ns}/pods/job` });
        return pod.status?.phase === 'Running';
      });
      await env.api.must({ method: 'DELETE', path: `/api/v1/namespaces/${ns}/pods/job` });
      await waitFor('the PVC collected with its pod', () => gone(`${claimsPath(ns)}/job-scratch`));
      await waitFor(`PV ${pv.metadata.name} deleted`, () => gone(`/api/v1/persistentvolumes/${pv.metadata.name}`));
    });

    test('if the owning process is killed (SIGKILL), the watchdog removes the volume directories too', async () => {
      const child = spawn(process.execPath, [FIXTURE], { stdio: ['ignore', 'pipe', 'inherit'] });
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`fixture exited with ${code}`)));
      });
      const { dir, pids, volumeDir } = JSON.parse(line) as {
        dir: string;
        pids: Record<string, number>;
        volumeDir: string;
      };
      assert.ok(await exists(volumeDir));
      child.kill('SIGKILL');
      await waitFor('every component to end', async () => Object.values(pids).every((p) => !alive(p)), 20_000);
      await waitFor('the run directory to be removed', async () => !(await exists(dir)), 10_000);
      assert.equal(await exists(volumeDir), false, `${volumeDir} removed`);
    });
  });

  test('stop() removes the directories of the volumes still provisioned', async () => {
    const list = await env.api.must<{ items: Volume[] }>({ path: '/api/v1/persistentvolumes' });
    const paths = list.items.map((v) => v.spec.hostPath?.path ?? '');
    assert.ok(paths.length > 0);
    for (const path of paths) assert.ok(await exists(path));
    await env.stop();
    for (const path of paths) assert.equal(await exists(path), false, `${path} removed`);
  });
});
