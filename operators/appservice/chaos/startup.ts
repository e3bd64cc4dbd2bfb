/**
 * @module chaos/startup
 * The operator started against a broken setting must say what is wrong on one plain line (after any JSON log lines)
 * and exit non-zero, without a stack trace: a malformed kubeconfig, a kubeconfig without a current context, a cluster that does not answer, a cluster
 * without the AppService CRD.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { start } from '@opkit/testenv';
import { MAIN, SOURCE_CONDITION } from './cluster.ts';

export interface StartupCheck {
  readonly case: string;
  readonly exitCode: number | null;
  readonly seconds: number;
  readonly message: string;
  readonly ok: boolean;
  readonly problem?: string;
}

function run(kubeconfig: string, mustMention: RegExp, what: string): Promise<StartupCheck> {
  const t0 = performance.now();
  const p = spawn(
    process.execPath,
    [MAIN, '--kubeconfig', kubeconfig, '--metrics-bind-address', '0', '--health-probe-bind-address', '0'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: SOURCE_CONDITION } },
  );
  let out = '';
  let err = '';
  p.stdout.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  p.stderr.setEncoding('utf8').on('data', (c: string) => {
    err += c;
  });
  const timer = setTimeout(() => p.kill('SIGKILL'), 90_000);
  return new Promise((resolve) => {
    p.once('exit', (code) => {
      clearTimeout(timer);
      // structured log lines (JSON) may come first; the reason is the one plain line
      const lines = err.split('\n').filter((l) => l.trim() && !l.startsWith('{'));
      const message = lines.join(' | ');
      const problems = [
        code === 0 || code === null ? `exit ${code}` : '',
        lines.length !== 1 ? `${lines.length} plain lines on stderr, not one` : '',
        /\n\s+at /.test(`${out}\n${err}`) ? 'a stack trace' : '',
        mustMention.test(message) ? '' : `the message does not say ${mustMention}`,
      ].filter(Boolean);
      resolve({
        case: what,
        exitCode: code,
        seconds: Math.round((performance.now() - t0) / 100) / 10,
        message,
        ok: problems.length === 0,
        ...(problems.length ? { problem: problems.join('; ') } : {}),
      });
    });
  });
}

export async function startupChecks(): Promise<StartupCheck[]> {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-chaos-startup-'));
  const env = await start({ nodes: 0, log: () => {} });
  try {
    const malformed = join(dir, 'malformed');
    await writeFile(malformed, 'apiVersion: v1\nclusters: [[[\n  - {', { mode: 0o600 });
    const noContext = join(dir, 'no-context');
    await writeFile(noContext, 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n', {
      mode: 0o600,
    });
    const unreachable = join(dir, 'unreachable');
    await writeFile(
      unreachable,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]',
        'contexts: [{name: c, context: {cluster: c, user: u}}]',
        'current-context: c',
        'users: [{name: u, user: {token: t}}]',
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    // side by side: the unreachable cluster's retries take about 30 s, the others a second each
    return await Promise.all([
      run(malformed, /malformed/, 'malformed kubeconfig'),
      run(noContext, /no-context/, 'kubeconfig without a context'),
      run(env.kubeconfigPath, /appservices\.app\.example\.com|AppService|CRD/i, 'the CRD is not installed'),
      run(unreachable, /127\.0\.0\.1:1|unreachable|connect/i, 'the cluster does not answer'),
    ]);
  } finally {
    await env.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
