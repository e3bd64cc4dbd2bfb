// testenv's exit-code Stage on a real control plane: a Job whose pod template carries testenv.opkit.dev/exit-code
// fails (its pod Failed with that exit code, the Job Failed by the Job controller); one without it completes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Environment, EXIT_CODE_ANNOTATION, start } from '../src/index.ts';
import { quiet, waitFor } from './helpers.ts';

interface Job {
  status?: { failed?: number; succeeded?: number; conditions?: { type: string; status: string; reason?: string }[] };
}
interface PodList {
  items: {
    status?: {
      phase?: string;
      containerStatuses?: { state?: { terminated?: { exitCode?: number; reason?: string } } }[];
    };
  }[];
}

let env: Environment;
before(async () => {
  env = await start({ nodes: 1, log: quiet });
});
after(async () => {
  await env?.stop();
});

function createJob(name: string, annotations: Record<string, string>) {
  return env.api.must({
    method: 'POST',
    path: '/apis/batch/v1/namespaces/default/jobs',
    body: {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name },
      spec: {
        backoffLimit: 0,
        template: {
          metadata: { annotations },
          spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox', command: ['true'] }] },
        },
      },
    },
  });
}

const final = (name: string, type: 'Complete' | 'Failed') =>
  waitFor(`Job ${name} ${type}`, async () => {
    const job = await env.api.must<Job>({ path: `/apis/batch/v1/namespaces/default/jobs/${name}` });
    return job.status?.conditions?.some((c) => c.type === type && c.status === 'True') ? job : undefined;
  });

const podsOf = async (name: string) =>
  (await env.api.must<PodList>({ path: `/api/v1/namespaces/default/pods?labelSelector=job-name%3D${name}` })).items;

test('a Job pod annotated with an exit code fails with it, and the Job fails', async () => {
  await createJob('fails', { [EXIT_CODE_ANNOTATION]: '3' });
  const job = await final('fails', 'Failed');
  assert.equal(job.status?.failed, 1);
  const [pod, ...more] = await podsOf('fails');
  assert.equal(more.length, 0, 'backoffLimit 0: one pod');
  assert.equal(pod?.status?.phase, 'Failed');
  assert.deepEqual(pod?.status?.containerStatuses?.[0]?.state?.terminated, {
    ...pod?.status?.containerStatuses?.[0]?.state?.terminated,
    exitCode: 3,
    reason: 'Error',
  });
});

test('a Job pod without the annotation still completes', async () => {
  await createJob('works', {});
  const job = await final('works', 'Complete');
  assert.equal(job.status?.succeeded, 1);
  assert.equal((await podsOf('works'))[0]?.status?.phase, 'Succeeded');
});
