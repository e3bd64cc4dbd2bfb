/**
 * @module commands/run-operator
 * `opkit run [--dir DIR] [--kubeconfig FILE] [-- operator flags…]`: runs the project's operator locally (node
 * src/main.ts) against the current kubeconfig — or, when that does not answer, the cluster of `opkit env up` —
 * after applying its CRDs. Signals are passed to the operator; opkit exits with its exit code, or 128 + the signal's
 * number when a signal ended it (130 for Ctrl-C), as a shell does.
 *
 * Before it touches the cluster, the run checks that the ports its operator will listen on (metrics, health, and the
 * webhook port when given) are free, and fails naming the port and the flag that moves it (commands/run-ports.ts).
 *
 * A project with webhooks (config/webhook) has them served by the local operator, as envtest does: a CA and a serving
 * certificate for 127.0.0.1 in a temporary directory, a free port (or the operator's `--webhook-bind-address`), the
 * CRDs' conversion and the webhook configurations pointed at `https://127.0.0.1:<port>` with that CA, and the
 * operator started with `--webhook-bind-address` / `--webhook-cert-dir`. Those configurations and conversions are
 * the run's own (commands/run-owner.ts): annotated with the run that wrote them, never written over while another
 * live run owns them or when a deployment's configurations are there (the run fails before writing, naming the
 * owner and what to do), and, when the run ends, the configurations it still owns are deleted — so a stopped local
 * operator does not block writes (`failurePolicy: Fail`) and a second run never removes a first one's. The apiserver
 * must reach 127.0.0.1 of this machine (`opkit env up`, testenv; not a remote cluster).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { constants, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { KubeObject } from '@opkit/runtime';
import { Applier, Client, loadConfig, parseManifests } from '@opkit/runtime/client';
import { createCertificateAuthority, issueServingCertificate } from '@opkit/runtime/tls';
import { pointWebhooksAt } from '@opkit/runtime/webhook';
import { type ClusterStatus, paths, readJson, stateDir } from '../env/state.ts';
import { CliError } from '../errors.ts';
import { readProject } from '../project/project.ts';
import { newRunOwner, RunClaims } from './run-owner.ts';
import { type OperatorPort, operatorPort, operatorPorts, portsInUse } from './run-ports.ts';

export const RUN_HELP = `Usage: opkit run [--dir DIR] [--kubeconfig FILE] [-- OPERATOR FLAGS]

Applies the project's CRDs and runs the operator locally (node src/main.ts) against the current kubeconfig, or the
cluster of "opkit env up" when that does not answer. Flags after -- go to the operator (see node src/main.ts --help).
A project with webhooks has them served locally (a test CA, 127.0.0.1, a free port); the webhook configurations
belong to the run (annotated opkit.dev/run-id) and are removed when it ends. A run fails, having written nothing, when
a port of the operator is taken (--metrics-bind-address, --health-probe-bind-address, --webhook-bind-address after
--) or when another live run of the project, or a deployment, owns the webhook configurations.
`;

/**
 * The kubeconfig to use: the given one, or the current one, if it answers. Only with `fallback` (for `opkit run`,
 * which writes nothing but CRDs to a dev cluster) does a current kubeconfig that does not answer give way to a running
 * `opkit env up` cluster; commands that deploy or delete never switch clusters implicitly.
 */
export async function reachableKubeconfig(
  explicit: string | undefined,
  options: { fallback: boolean },
): Promise<{ path: string | undefined; server: string }> {
  let server: string | undefined;
  try {
    const config = await loadConfig(explicit ? { path: explicit } : {});
    server = config.server;
    const probe = new Client(config, { timeoutMs: 3_000 });
    try {
      await probe.serverResources('v1');
    } finally {
      probe.close();
    }
    return { path: explicit ?? process.env.KUBECONFIG, server: config.server };
  } catch (err) {
    const reason = (err as Error).message.split('\n')[0];
    if (explicit) throw new CliError('ClusterNotRunning', `the cluster of ${explicit} does not answer: ${reason}`);
    const status = await readJson<ClusterStatus>(paths(stateDir('default')).status);
    const dev = status?.phase === 'ready' && status.kubeconfigPath && status.server ? status : undefined;
    if (!options.fallback) {
      throw new CliError(
        'ClusterNotRunning',
        `${server ? `the cluster of the current kubeconfig (${server}) does not answer` : 'no cluster to write to'}: ` +
          `${reason}; opkit never switches to another cluster for a command that writes: start that cluster, or ` +
          `choose one with --kubeconfig or KUBECONFIG${dev ? ` (opkit env up's: --kubeconfig ${dev.kubeconfigPath})` : ''}`,
      );
    }
    if (dev?.kubeconfigPath && dev.server) return { path: dev.kubeconfigPath, server: dev.server };
    throw new CliError(
      'ClusterNotRunning',
      `no cluster answers (${(err as Error).message.split('\n')[0]}): start one with "npx opkit env up", or set KUBECONFIG`,
    );
  }
}

/**
 * The shell's exit code: 128 + the signal's number for a run stopped by a signal — the one `opkit run` received and
 * passed on (`interrupted`), even when the operator then stopped cleanly with 0, or the one that ended the child —
 * else the child's own code.
 */
export function exitCodeOf(
  code: number | null,
  signal: NodeJS.Signals | null,
  interrupted?: NodeJS.Signals | undefined,
): number {
  if (interrupted && (code === 0 || code === null)) return 128 + (constants.signals[interrupted] ?? 15);
  if (code !== null) return code;
  return signal ? 128 + (constants.signals[signal] ?? 15) : 1;
}

export async function crdObjects(dir: string): Promise<KubeObject[]> {
  const base = join(dir, 'config/crd/bases');
  const files = (await readdir(base).catch(() => [] as string[])).filter((f) => f.endsWith('.yaml')).sort();
  if (files.length === 0) throw new CliError('Usage', `no CRDs in ${base}: run opkit generate first`);
  const out: KubeObject[] = [];
  for (const f of files) out.push(...parseManifests(await readFile(join(base, f), 'utf8'), join(base, f)));
  return out;
}

export async function runCommand(argv: readonly string[], out: (line: string) => void): Promise<number> {
  const split = argv.indexOf('--');
  const own = split >= 0 ? argv.slice(0, split) : [...argv];
  const passThrough = split >= 0 ? argv.slice(split + 1) : [];
  const { values } = parseArgs({
    args: own,
    options: {
      dir: { type: 'string', default: '.' },
      kubeconfig: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    out(RUN_HELP);
    return 0;
  }
  const dir = resolve(values.dir);
  const project = await readProject(dir);
  const help = passThrough.includes('--help') || passThrough.includes('-h');
  // the operator's ports first: a run that cannot listen must not touch the cluster (another run's webhooks)
  const webhookPort = await localWebhookPort(dir, passThrough);
  if (!help) {
    const taken = await portsInUse([
      ...operatorPorts(passThrough, process.env),
      ...(webhookPort?.given ? [webhookPort.given] : []),
    ]);
    if (taken) throw taken;
  }
  const target = await reachableKubeconfig(values.kubeconfig, { fallback: true });
  const client = new Client(await loadConfig(target.path ? { path: target.path } : {}), { name: 'opkit' });
  const webhooks = webhookPort ? await localWebhooks(dir, webhookPort.port) : undefined;
  const claims = new RunClaims(client, newRunOwner(randomUUID(), new Date()));
  let crds: KubeObject[];
  try {
    crds = await crdObjects(dir);
    if (webhooks) {
      crds = crds.map((c) => pointWebhooksAt(c, webhooks.url, webhooks.caBundle));
      const owned = [...crds.filter(convertsByWebhook), ...webhooks.configurations];
      await claims.check(owned); // reads only: refuses what another run (or a deployment) owns
      await new Applier(client, 'opkit').applyAll(crds.filter((c) => !convertsByWebhook(c)));
      await claims.claim(owned);
    } else {
      await new Applier(client, 'opkit').applyAll(crds);
    }
    out(
      `opkit: applied ${crds.length} CRD(s)${webhooks ? ` and ${webhooks.configurations.length} webhook configuration(s), served at ${webhooks.url}` : ''} to ${target.server}; running ${project.projectName}`,
    );
  } catch (err) {
    client.close();
    if (webhooks) await rm(webhooks.certDir, { recursive: true, force: true });
    throw err;
  }
  const child = spawn(
    process.execPath,
    [
      join(dir, 'src/main.ts'),
      ...(target.path ? ['--kubeconfig', target.path] : []),
      ...(webhooks ? ['--webhook-bind-address', webhooks.bindAddress, '--webhook-cert-dir', webhooks.certDir] : []),
      ...passThrough,
    ],
    {
      cwd: dir,
      stdio: 'inherit',
    },
  );
  let interrupted: NodeJS.Signals | undefined;
  const forward = (sig: NodeJS.Signals) => {
    interrupted ??= sig;
    child.kill(sig);
  };
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  const code = await new Promise<number>((res) => child.once('exit', (c, s) => res(exitCodeOf(c, s, interrupted))));
  process.off('SIGINT', forward);
  process.off('SIGTERM', forward);
  try {
    if (webhooks) {
      // a stopped local operator must not block writes through failurePolicy: Fail — but only this run's go
      const { removed, left } = await claims.release();
      const configurations = removed.filter((r) => !r.startsWith('CustomResourceDefinition ')).length;
      out(`opkit: removed the ${configurations} webhook configuration(s) of this run`);
      for (const line of left) out(`opkit: ${line}`);
    }
  } finally {
    if (webhooks) await rm(webhooks.certDir, { recursive: true, force: true });
    client.close();
  }
  return code;
}

/** A CRD whose conversion goes through a webhook: `opkit run` points it at the local operator, and owns that. */
function convertsByWebhook(crd: KubeObject): boolean {
  return (crd as { spec?: { conversion?: { strategy?: string } } }).spec?.conversion?.strategy === 'Webhook';
}

/**
 * For a project with config/webhook: the port its local webhook server listens on — the operator's
 * `--webhook-bind-address` / WEBHOOK_BIND_ADDRESS when one is given with a port (and then checked like the other
 * ports), else a free one; undefined for a project without webhooks.
 */
async function localWebhookPort(
  dir: string,
  passThrough: readonly string[],
): Promise<{ port: number; given: OperatorPort | undefined } | undefined> {
  if (!existsSync(webhookManifests(dir))) return undefined;
  const given = operatorPort('webhook', passThrough, process.env, undefined);
  if (given && given.port !== 0) return { port: given.port, given };
  const port = await new Promise<number>((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => res(p));
    });
  });
  return { port, given: undefined };
}

const webhookManifests = (dir: string) => join(dir, 'config/webhook/manifests.yaml');

interface LocalWebhooks {
  readonly url: string;
  readonly bindAddress: string;
  readonly caBundle: string;
  readonly certDir: string;
  readonly configurations: KubeObject[];
}

/** For a project with config/webhook: certificates, and the configurations pointed at `port` of this machine. */
async function localWebhooks(dir: string, port: number): Promise<LocalWebhooks> {
  const file = webhookManifests(dir);
  const text = await readFile(file, 'utf8');
  const certDir = await mkdtemp(join(tmpdir(), 'opkit-run-webhook-'));
  const ca = createCertificateAuthority('opkit-run-webhook-ca');
  const pair = issueServingCertificate(ca, ['127.0.0.1', 'localhost']);
  await writeFile(join(certDir, 'tls.crt'), pair.certPem, { mode: 0o600 });
  await writeFile(join(certDir, 'tls.key'), pair.keyPem, { mode: 0o600 });
  const url = `https://127.0.0.1:${port}`;
  const caBundle = Buffer.from(ca.certPem).toString('base64');
  return {
    url,
    bindAddress: `127.0.0.1:${port}`,
    caBundle,
    certDir,
    configurations: parseManifests(text, file).map((c) => pointWebhooksAt(c, url, caBundle)),
  };
}
