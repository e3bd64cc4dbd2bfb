import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LocalCluster } from '../env/state.ts';
import type { CliError } from '../errors.ts';
import { type ClusterChoice, chooseRunCluster, type Probe } from './run-cluster.ts';

const up = (name: string, port: number): LocalCluster => ({
  name,
  running: true,
  status: { phase: 'ready', server: `https://127.0.0.1:${port}`, kubeconfigPath: `/state/${name}/kubeconfig` },
  up: { server: `https://127.0.0.1:${port}`, kubeconfigPath: `/state/${name}/kubeconfig` },
});
const stopped = (name: string): LocalCluster => ({
  name,
  running: false,
  status: { phase: 'ready', server: 'https://127.0.0.1:1', kubeconfigPath: `/state/${name}/kubeconfig` },
  up: undefined,
});
const starting = (name: string): LocalCluster => ({
  name,
  running: true,
  status: { phase: 'starting' },
  up: undefined,
});

/** A probe that answers for the kubeconfigs in `answering` (undefined: the default loading rules) and records calls. */
function probe(answering: Record<string, string>): Probe & { calls: (string | undefined)[] } {
  const calls: (string | undefined)[] = [];
  const p = async (kubeconfig: string | undefined) => {
    calls.push(kubeconfig);
    const server = answering[kubeconfig ?? '<default>'];
    return server
      ? { ok: true as const, server }
      : { ok: false as const, server: 'https://127.0.0.1:1', reason: 'connect ECONNREFUSED 127.0.0.1:1' };
  };
  return Object.assign(p, { calls });
}

function choice(over: Partial<ClusterChoice>): ClusterChoice {
  return {
    kubeconfigFlag: undefined,
    clusterFlag: undefined,
    kubeconfigEnv: undefined,
    clusters: [],
    probe: probe({}),
    ...over,
  };
}

const alpha = up('alpha', 6001);
const beta = up('beta', 6002);
const answersAll = () =>
  probe({
    '/state/alpha/kubeconfig': 'https://127.0.0.1:6001',
    '/state/beta/kubeconfig': 'https://127.0.0.1:6002',
    '/k': 'https://10.0.0.1:6443',
    '<default>': 'https://10.0.0.2:6443',
  });

test('--cluster NAME uses that local cluster, whatever KUBECONFIG says', async () => {
  const p = answersAll();
  const t = await chooseRunCluster(
    choice({ clusterFlag: 'beta', kubeconfigEnv: '/k', clusters: [alpha, beta], probe: p }),
  );
  assert.deepEqual(t, {
    path: '/state/beta/kubeconfig',
    server: 'https://127.0.0.1:6002',
    chosen: 'local cluster "beta" (--cluster beta)',
    local: 'beta',
  });
  assert.deepEqual(p.calls, ['/state/beta/kubeconfig']);
});

test('a bad --cluster names the flag and the local clusters there are, with their state', async () => {
  const clusters = [alpha, stopped('old'), starting('new')];
  await assert.rejects(
    chooseRunCluster(choice({ clusterFlag: 'gamma', clusters, probe: answersAll() })),
    (err: CliError) =>
      err.code === 'UnknownCluster' &&
      err.exitCode === 2 &&
      err.message ===
        '--cluster gamma: no local cluster has that name (local clusters: there are "alpha" (ready at https://127.0.0.1:6001), "old" (not running), "new" (starting)); start it with npx opkit env up --name gamma',
  );
  await assert.rejects(
    chooseRunCluster(choice({ clusterFlag: 'Not_A_Name', clusters: [] })),
    (err: CliError) =>
      err.code === 'UnknownCluster' &&
      /^--cluster "Not_A_Name" is not a cluster name .*there are none$/.test(err.message),
  );
  await assert.rejects(
    chooseRunCluster(choice({ clusterFlag: 'old', clusters })),
    (err: CliError) =>
      err.code === 'ClusterNotRunning' &&
      err.message === '--cluster old: local cluster "old" is not running: start it with npx opkit env up --name old',
  );
  await assert.rejects(chooseRunCluster(choice({ clusterFlag: 'new', clusters })), (err: CliError) =>
    /local cluster "new" is starting: wait for its "opkit env up" to finish/.test(err.message),
  );
  await assert.rejects(
    chooseRunCluster(choice({ clusterFlag: 'alpha', clusters, probe: probe({}) })),
    (err: CliError) =>
      err.code === 'ClusterNotRunning' &&
      /^local cluster "alpha" \(https:\/\/127\.0\.0\.1:6001\) does not answer: connect ECONNREFUSED/.test(err.message),
  );
  await assert.rejects(
    chooseRunCluster(choice({ clusterFlag: 'alpha', kubeconfigFlag: '/k' })),
    (err: CliError) => err.code === 'Usage' && /--cluster and --kubeconfig/.test(err.message),
  );
});

test('without KUBECONFIG: the one local cluster up; with several, an error naming them and --cluster', async () => {
  const one = await chooseRunCluster(choice({ clusters: [alpha, stopped('old')], probe: answersAll() }));
  assert.deepEqual(one, {
    path: '/state/alpha/kubeconfig',
    server: 'https://127.0.0.1:6001',
    chosen: 'local cluster "alpha" (the only local cluster running; KUBECONFIG is unset)',
    local: 'alpha',
  });
  await assert.rejects(
    chooseRunCluster(choice({ clusters: [alpha, beta], kubeconfigEnv: '', probe: answersAll() })),
    (err: CliError) =>
      err.code === 'ClusterAmbiguous' &&
      err.exitCode === 2 &&
      err.message ===
        '2 local clusters are running ("alpha" at https://127.0.0.1:6001, "beta" at https://127.0.0.1:6002) and KUBECONFIG is unset: choose one with --cluster NAME (e.g. opkit run --cluster alpha), or set KUBECONFIG',
  );
  const none = await chooseRunCluster(choice({ clusters: [stopped('old')], probe: answersAll() }));
  assert.deepEqual(none, {
    path: undefined,
    server: 'https://10.0.0.2:6443',
    chosen: 'the default kubeconfig (KUBECONFIG is unset and no local cluster is running)',
  });
  await assert.rejects(
    chooseRunCluster(choice({ clusters: [stopped('old')], probe: probe({}) })),
    (err: CliError) =>
      err.code === 'ClusterNotRunning' &&
      /^no cluster answers \(KUBECONFIG is unset, no local cluster is running — there are "old" \(not running\), and the default kubeconfig: connect ECONNREFUSED .*start one with "npx opkit env up", or set KUBECONFIG$/.test(
        err.message,
      ),
  );
});

test('KUBECONFIG: its cluster when it answers (named when it is a local one), else the one local cluster up', async () => {
  const mine = await chooseRunCluster(choice({ kubeconfigEnv: '/k', clusters: [alpha, beta], probe: answersAll() }));
  assert.deepEqual(mine, { path: undefined, server: 'https://10.0.0.2:6443', chosen: 'the cluster of KUBECONFIG=/k' });
  const local = await chooseRunCluster(
    choice({ kubeconfigEnv: '/state/beta/kubeconfig', clusters: [alpha, beta], probe: answersAll() }),
  );
  assert.equal(local.chosen, 'local cluster "beta" (KUBECONFIG)');
  assert.equal(local.local, 'beta', 'a run through KUBECONFIG records the local cluster it uses by name');
  const fallback = await chooseRunCluster(
    choice({
      kubeconfigEnv: '/k',
      clusters: [beta],
      probe: probe({ '/state/beta/kubeconfig': 'https://127.0.0.1:6002' }),
    }),
  );
  assert.equal(fallback.path, '/state/beta/kubeconfig');
  assert.match(
    fallback.chosen,
    /^local cluster "beta" \(the only local cluster running; the cluster of KUBECONFIG=\/k \(https:\/\/127\.0\.0\.1:1\) does not answer: connect ECONNREFUSED/,
  );
  await assert.rejects(
    chooseRunCluster(choice({ kubeconfigEnv: '/k', clusters: [], probe: probe({}) })),
    (err: CliError) =>
      /^no cluster answers \(the cluster of KUBECONFIG=\/k .* no local cluster is running\): start one with "npx opkit env up"/.test(
        err.message,
      ),
  );
});

test('--kubeconfig FILE: that cluster or an error, never another', async () => {
  const t = await chooseRunCluster(choice({ kubeconfigFlag: '/k', clusters: [alpha], probe: answersAll() }));
  assert.deepEqual(t, { path: '/k', server: 'https://10.0.0.1:6443', chosen: 'the cluster of --kubeconfig /k' });
  await assert.rejects(
    chooseRunCluster(choice({ kubeconfigFlag: '/nope', clusters: [alpha], probe: answersAll() })),
    (err: CliError) => err.code === 'ClusterNotRunning' && /^the cluster of \/nope does not answer/.test(err.message),
  );
});
