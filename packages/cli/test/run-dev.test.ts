/**
 * `opkit run` for development, on two local clusters of `opkit env up --name` and two projects made as a user makes
 * them (outside the repository): the run chooses the cluster `--cluster` names (and without KUBECONFIG the only one
 * that is up, or fails naming them when several are), two runs at once both come up with their servers on
 * 127.0.0.1 only and on ports of their own, and the URLs they print answer.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cacheRoot, resolveBinaries, waitFor } from '@opkit/testenv';
import { MAIN, operatorsOf, opkitSync, scaffoldProject, startOpkitRun } from './fixtures/project.ts';

let work: string;
let kubectlPath: string;
/** The environment of every opkit command here: its own state directory, the real binary cache, no KUBECONFIG. */
let childEnv: NodeJS.ProcessEnv;
const kubeconfigs: Record<string, string> = {};
const servers: Record<string, string> = {};

const opkit = (cwd: string, args: string[]) => opkitSync(cwd, args, childEnv);
const scaffold = (name: string, kind: string, webhooks: boolean) =>
  scaffoldProject(work, name, kind, { webhooks, env: childEnv });

function opkitAsync(cwd: string, args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [MAIN, ...args], { cwd, env: childEnv });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, out })));
}

function kubectl(cluster: string, args: string[], input?: string) {
  const r = spawnSync(kubectlPath, ['--kubeconfig', kubeconfigs[cluster] ?? '', ...args], {
    encoding: 'utf8',
    ...(input !== undefined ? { input } : {}),
  });
  return { code: r.status, out: r.stdout + r.stderr };
}

/** An address of /proc/net/tcp{,6} (hex, in host byte order per 32-bit word) as text. */
function decodeAddress(hex: string): string {
  const bytes = (hex.match(/.{8}/g) ?? []).flatMap((word) =>
    (word.match(/../g) ?? []).reverse().map((b) => parseInt(b, 16)),
  );
  if (bytes.length === 4) return bytes.join('.');
  const groups = Array.from({ length: 8 }, (_, i) =>
    (((bytes[2 * i] ?? 0) << 8) | (bytes[2 * i + 1] ?? 0)).toString(16),
  );
  return `[${groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::')}]`;
}

/** Every TCP address process `pid` listens on, as `host:port`, read from /proc. */
async function listening(pid: number): Promise<string[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m?.[1]) inodes.add(m[1]);
  }
  const out: string[] = [];
  for (const table of ['tcp', 'tcp6']) {
    for (const line of (await readFile(`/proc/${pid}/net/${table}`, 'utf8')).split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] !== '0A' || !inodes.has(cols[9] ?? '')) continue; // 0A: LISTEN
      const [address, port] = (cols[1] ?? '').split(':');
      out.push(`${decodeAddress(address ?? '')}:${parseInt(port ?? '', 16)}`);
    }
  }
  return out.sort();
}

/** GET `url` (TLS not verified: the servers' certificates are self-signed or of the run's test CA). */
function get(url: string, token?: string): Promise<{ status: number; body: string }> {
  if (url.startsWith('http:')) {
    return fetch(url).then(async (r) => ({ status: r.status, body: await r.text() }));
  }
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { rejectUnauthorized: false, headers: token ? { authorization: `Bearer ${token}` } : {} },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const startRun = (dir: string, args: string[]) => startOpkitRun(dir, args, childEnv);

/** The URLs a run printed: `opkit: metrics: URL`, `opkit: health: URL/healthz and /readyz`, `opkit: webhooks: URL`. */
function printedUrls(log: string) {
  return {
    metrics: /^opkit: metrics: (https?:\/\/\S+)/m.exec(log)?.[1],
    health: /^opkit: health: (http:\/\/\S+)\/healthz and \/readyz/m.exec(log)?.[1],
    webhooks: /^opkit: webhooks: (https:\/\/\S+)/m.exec(log)?.[1],
  };
}

const portOf = (url: string | undefined) => Number(new URL(url ?? 'http://x').port);

let gadgets: string;
let gizmos: string;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'opkit-run-dev-'));
  const { KUBECONFIG: _unset, ...rest } = process.env;
  childEnv = { ...rest, OPKIT_STATE_DIR: join(work, 'state'), OPKIT_CACHE_DIR: cacheRoot() };
  kubectlPath = (await resolveBinaries({ log: () => {} })).kubectl ?? 'kubectl';
  const ups = Promise.all(
    ['alpha', 'beta'].map((name) => opkitAsync(work, ['env', 'up', '--name', name, '--nodes', '0'])),
  );
  gadgets = scaffold('gadget-operator', 'Gadget', true);
  gizmos = scaffold('gizmo-operator', 'Gizmo', false);
  for (const [i, r] of (await ups).entries()) {
    const name = ['alpha', 'beta'][i] ?? '';
    assert.equal(r.code, 0, r.out);
    kubeconfigs[name] = /^export KUBECONFIG=(.+)$/m.exec(r.out)?.[1] ?? '';
    servers[name] = / at (https:\/\/127\.0\.0\.1:\d+)/.exec(r.out)?.[1] ?? '';
  }
});

after(async () => {
  for (const name of ['alpha', 'beta']) opkit(work, ['env', 'down', '--name', name]);
  await rm(work, { recursive: true, force: true });
});

describe('opkit run chooses the local cluster', () => {
  test('with two local clusters up and no KUBECONFIG it fails naming both and --cluster; a bad --cluster names the flag and the clusters', () => {
    const several = opkit(gizmos, ['run']);
    assert.equal(several.code, 2, several.out);
    assert.match(
      several.out,
      new RegExp(
        `^opkit: 2 local clusters are running \\("alpha" at ${servers.alpha}, "beta" at ${servers.beta}\\) and KUBECONFIG is unset: choose one with --cluster NAME`,
      ),
    );
    const bad = opkit(gizmos, ['run', '--cluster', 'gamma']);
    assert.equal(bad.code, 2, bad.out);
    assert.match(
      bad.out,
      new RegExp(
        `^opkit: --cluster gamma: no local cluster has that name \\(local clusters: there are "alpha" \\(ready at ${servers.alpha}\\), "beta" \\(ready at ${servers.beta}\\)\\)`,
      ),
    );
    for (const cluster of ['alpha', 'beta']) {
      assert.match(kubectl(cluster, ['get', 'crd', 'gizmos.toys.example.org']).out, /NotFound/, 'nothing was applied');
    }
  });

  test('two runs of two projects at once, --cluster beta: both come up on 127.0.0.1 only, on ports of their own, and their URLs answer', {
    timeout: 300_000,
  }, async (t) => {
    const runs = [startRun(gadgets, ['--cluster', 'beta']), startRun(gizmos, ['--cluster', 'beta'])];
    try {
      for (const run of runs) {
        const exitedEarly = run.exited.then((code) => {
          throw new Error(`opkit run exited with ${code}`);
        });
        await Promise.race([
          waitFor('the run to print its URLs', async () => printedUrls(run.log).health !== undefined, 60_000, 100),
          exitedEarly,
        ]).catch((err: Error) => {
          throw new Error(`${err.message}\n${run.log.slice(-3_000)}`);
        });
        exitedEarly.catch(() => {}); // the run ends later, when the test stops it
        assert.match(
          run.log,
          new RegExp(`^opkit: using local cluster "beta" \\(--cluster beta\\) at ${servers.beta}$`, 'm'),
        );
        const urls = printedUrls(run.log);
        await waitFor(
          `${urls.health}/readyz to answer 200`,
          async () => (await get(`${urls.health}/readyz`).catch(() => ({ status: 0 }))).status === 200,
          90_000,
          250,
        ).catch((err: Error) => {
          throw new Error(`${err.message}\n${run.log.slice(-3_000)}`);
        });
      }
      const [gadget, gizmo] = runs.map((r) => printedUrls(r.log));
      for (const r of runs)
        t.diagnostic(
          r.log
            .split('\n')
            .filter((l) => l.startsWith('opkit: '))
            .join('\n'),
        );
      assert.ok(gadget?.webhooks, 'the project with webhooks prints their URL');
      assert.equal(gizmo?.webhooks, undefined, 'the project without webhooks has no webhook server');

      // each operator listens on exactly the printed ports, on 127.0.0.1 only; no port is shared
      const printed = [gadget, gizmo].map((u) =>
        [u?.metrics, u?.health, u?.webhooks]
          .filter((x) => x !== undefined)
          .map((x) => `127.0.0.1:${portOf(x)}`)
          .sort(),
      );
      for (const [i, run] of runs.entries()) {
        const operators = await operatorsOf(run.child.pid ?? 0, [gadgets, gizmos][i] ?? '');
        assert.equal(operators.length, 1, `one operator process under opkit run ${run.child.pid}`);
        assert.deepEqual(await listening(operators[0] ?? 0), printed[i], run.log.slice(-2_000));
      }
      const all = printed.flat();
      assert.equal(new Set(all).size, all.length, `no port is shared: ${all.join(', ')}`);
      for (const u of [gadget, gizmo]) {
        // 8443 was wanted by both: at most one has it, the other says why it has another
        if (portOf(u?.metrics) !== 8443) {
          const line = runs
            .map((r) => r.log)
            .join('\n')
            .split('\n')
            .find((l) => l.includes(`metrics: ${u?.metrics}`));
          assert.match(line ?? '', /\(port 8443 is taken; /);
        }
      }

      // the printed URLs answer: health, metrics (a token allowed to get /metrics), webhooks (the apiserver calls them)
      for (const u of [gadget, gizmo]) assert.equal((await get(`${u?.health}/healthz`)).status, 200);
      assert.equal(kubectl('beta', ['create', 'serviceaccount', 'scraper']).code, 0);
      assert.equal(
        kubectl('beta', ['create', 'clusterrole', 'scrape', '--verb=get', '--non-resource-url=/metrics']).code,
        0,
      );
      assert.equal(
        kubectl('beta', [
          'create',
          'clusterrolebinding',
          'scrape',
          '--clusterrole=scrape',
          '--serviceaccount=default:scraper',
        ]).code,
        0,
      );
      const token = kubectl('beta', ['create', 'token', 'scraper']).out.trim();
      for (const u of [gadget, gizmo]) {
        assert.equal((await get(u?.metrics ?? '')).status, 401, 'metrics without a token');
        const scrape = await get(u?.metrics ?? '', token);
        assert.equal(scrape.status, 200, scrape.body);
        assert.match(scrape.body, /^# (HELP|TYPE) /m, 'Prometheus text');
      }
      const longName = JSON.stringify({
        apiVersion: 'toys.example.org/v1',
        kind: 'Gadget',
        metadata: { name: 'g'.repeat(64), namespace: 'default' },
        spec: {},
      });
      const refused = kubectl('beta', ['create', '--dry-run=server', '-f', '-'], longName);
      assert.match(
        refused.out,
        /Too long: may not be more than 63 bytes/,
        'the apiserver called the printed webhook server',
      );
      assert.match(
        kubectl('beta', [
          'get',
          'validatingwebhookconfigurations',
          '-o',
          'jsonpath={.items[*].webhooks[*].clientConfig.url}',
        ]).out,
        new RegExp(`^${gadget?.webhooks}/`),
      );

      // --cluster beta: the CRDs went to beta, not to alpha
      for (const crd of ['gadgets.toys.example.org', 'gizmos.toys.example.org']) {
        assert.equal(kubectl('beta', ['get', 'crd', crd]).code, 0, crd);
        assert.match(kubectl('alpha', ['get', 'crd', crd]).out, /NotFound/, `${crd} is not in alpha`);
      }
    } finally {
      for (const r of runs) r.child.kill('SIGINT');
    }
    for (const r of runs) assert.equal(await r.exited, 130, r.log.slice(-2_000));
  });

  test('without KUBECONFIG and with one local cluster up, the run uses it and says so', () => {
    assert.equal(opkit(work, ['env', 'down', '--name', 'alpha']).code, 0);
    const r = opkit(gizmos, ['run', '--', '--help']);
    assert.equal(r.code, 0, r.out);
    assert.match(
      r.out,
      new RegExp(
        `^opkit: using local cluster "beta" \\(the only local cluster running; KUBECONFIG is unset\\) at ${servers.beta}$`,
        'm',
      ),
    );
    assert.match(r.out, /--leader-elect/, 'the operator printed its help');
  });
});
