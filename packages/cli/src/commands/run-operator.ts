/**
 * @module commands/run-operator
 * `opkit run [--dir DIR] [--cluster NAME | --kubeconfig FILE] [-- operator flags…]`: runs the project's operator
 * locally (node src/main.ts) after applying its CRDs, against the cluster commands/run-cluster.ts chooses (the one
 * named, else KUBECONFIG's, else the one local cluster of `opkit env up` that is up), and says which. The operator
 * runs as commands/run-process.ts says: in a process group of its own, so one Ctrl-C reaches it once and it drains as
 * on SIGTERM, and stopped by a guard when opkit run is killed; opkit exits with its exit code, or 128 + the signal's
 * number when a signal ended it (130 for Ctrl-C), as a shell does. The run records itself, with its project
 * directory, its command and the cluster it uses (env/runs.ts), so `opkit env down` does not stop that cluster under it.
 *
 * Ports (commands/run-ports.ts): the operator's metrics, health and (for a project with webhooks) webhook servers
 * listen on 127.0.0.1 unless the user gives an address (a flag after `--` or its environment variable): their default
 * port when it is free, else a free port. Only those chosen addresses are passed on, as the operator's environment
 * variables (METRICS_BIND_ADDRESS, HEALTH_PROBE_BIND_ADDRESS, WEBHOOK_BIND_ADDRESS), which its flags override; the
 * operator's own defaults (`:8443`, `:8081`, `:9443`, for a deployment) are not touched. An address the user gave whose
 * port is taken, or chosen by another live run, fails the run before it touches the cluster, naming the port, the flag
 * and that run; so does a setting the operator would refuse (`METRICS_SECURE=no`, an address that is not `host:port`),
 * naming the flag or variable. Ports are chosen and recorded
 * under a lock shared by the runs of this machine (commands/run-reservations.ts), so two runs started together
 * never choose the same one. The run prints the URL of each server.
 *
 * A project with webhooks (config/webhook) has them served by the local operator, as envtest does: a CA and a serving
 * certificate for 127.0.0.1 in a temporary directory (WEBHOOK_CERT_DIR), the CRDs' conversion and the webhook
 * configurations pointed at `https://127.0.0.1:<webhook port>` with that CA. Those configurations and conversions are
 * the run's own (commands/run-owner.ts): annotated with the run that wrote them, never written over while another
 * live run owns them or when a deployment's configurations are there (the run fails before writing, naming the
 * owner and what to do), and, when the run ends, the configurations it still owns are deleted — so a stopped local
 * operator does not block writes (`failurePolicy: Fail`) and a second run never removes a first one's. The apiserver
 * must reach 127.0.0.1 of this machine (`opkit env up`, testenv; not a remote cluster).
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { KubeObject } from '@opkit/runtime';
import { Applier, Client, loadConfig, parseManifests } from '@opkit/runtime/client';
import type { CustomResourceDefinition } from '@opkit/runtime/kinds';
import { createCertificateAuthority, issueServingCertificate } from '@opkit/runtime/tls';
import { pointWebhooksAt } from '@opkit/runtime/webhook';
import { runCommandLine } from '../env/runs.ts';
import { CliError } from '../errors.ts';
import { readProject } from '../project/project.ts';
import { type RunTarget, runCluster } from './run-cluster.ts';
import { newRunOwner, RunClaims } from './run-owner.ts';
import { bindProblem, choosePorts, describeEndpoints, type Endpoint, endpointRequests, freePort } from './run-ports.ts';
import { runOperatorProcess } from './run-process.ts';
import { type Reservation, reservePorts } from './run-reservations.ts';

export const RUN_HELP = `Usage: opkit run [--dir DIR] [--cluster NAME | --kubeconfig FILE] [-- OPERATOR FLAGS]

Applies the project's CRDs and runs the operator locally (node src/main.ts). Flags after -- go to the operator (see
node src/main.ts --help).

Cluster: --cluster NAME (a local cluster of "opkit env up --name NAME"), --kubeconfig FILE, else KUBECONFIG's cluster,
else the local cluster that is up when there is exactly one (several: choose with --cluster), else ~/.kube/config.
The run says which cluster it uses.

Ports: metrics, health and webhooks listen on 127.0.0.1 only, on their default ports (8443, or 8080 with
--metrics-secure=false; 8081) when free, else on free ports; the run prints each URL. An address you give
(--metrics-bind-address, --health-probe-bind-address, --webhook-bind-address after --, or METRICS_BIND_ADDRESS,
HEALTH_PROBE_BIND_ADDRESS, WEBHOOK_BIND_ADDRESS) is used as given, and the run fails, having written nothing, when its
port is taken or another opkit run has chosen it.

A project with webhooks has them served locally (a test CA, 127.0.0.1); the webhook configurations belong to the run
(annotated opkit.dev/run-id) and are removed when it ends. A run fails, having written nothing, when another live run
of the project, or a deployment, owns them.

Stopping: Ctrl-C (or SIGTERM) reaches the operator once, and it drains its reconciles as on SIGTERM; a second Ctrl-C
more than a second later stops it at once. If opkit run itself is killed, the operator is sent SIGTERM. While the run
lives, "opkit env down" refuses to stop the cluster it uses.
`;

export async function crdObjects(dir: string): Promise<KubeObject[]> {
  const base = join(dir, 'config/crd/bases');
  const files = (await readdir(base).catch(() => [] as string[])).filter((f) => f.endsWith('.yaml')).sort();
  if (files.length === 0) throw new CliError('Usage', `no CRDs in ${base}: run opkit generate first`);
  const out: KubeObject[] = [];
  for (const f of files) out.push(...parseManifests(await readFile(join(base, f), 'utf8'), join(base, f)));
  return out;
}

/** `opkit run`'s own flags (before `--`) and the operator's (after it). */
function parseRunArgs(argv: readonly string[]) {
  const split = argv.indexOf('--');
  const own = split >= 0 ? argv.slice(0, split) : [...argv];
  const passThrough = split >= 0 ? argv.slice(split + 1) : [];
  const { values } = parseArgs({
    args: own,
    options: {
      dir: { type: 'string', default: '.' },
      kubeconfig: { type: 'string' },
      cluster: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  return { values, passThrough };
}

/** What a run holds from its start to its end, and gives back when it ends (or fails before the operator starts). */
interface Run {
  readonly dir: string;
  readonly ports: Reservation<Endpoint[]>;
  readonly target: RunTarget;
  readonly client: Client;
  readonly webhooks: LocalWebhooks | undefined;
  readonly claims: RunClaims;
}

/** The operator's ports, chosen and recorded before anything else: a run that cannot listen must not touch the cluster. */
async function reserveRunPorts(
  dir: string,
  argv: readonly string[],
  passThrough: readonly string[],
  operatorHelp: boolean,
  out: (line: string) => void,
): Promise<Reservation<Endpoint[]>> {
  const requests = endpointRequests(passThrough, process.env, { webhooks: existsSync(webhookManifests(dir)) });
  const ports = await reservePorts(
    async (reserved) => {
      const endpoints = await choosePorts(requests, { bindProblem, freePort, reserved }, { check: !operatorHelp });
      return { value: endpoints, ports: endpoints.map((e) => e.port).filter((p) => p > 0) };
    },
    { run: { dir, command: runCommandLine(argv) } },
  );
  if (ports.unrecorded) {
    out(
      `opkit: cannot record this run (${ports.unrecorded}): a run started at the same moment may choose the same ports, and opkit env down does not see that this run uses its cluster`,
    );
  }
  return ports;
}

/**
 * The cluster the run uses, said and added to the run's record, and a client of it; the ports are released when there
 * is none.
 */
async function connect(
  flags: { kubeconfig?: string | undefined; cluster?: string | undefined },
  ports: Reservation<Endpoint[]>,
  out: (line: string) => void,
): Promise<{ target: RunTarget; client: Client }> {
  try {
    const target = await runCluster(flags);
    out(`opkit: using ${target.chosen} at ${target.server}`);
    await ports.useCluster({ ...(target.local ? { name: target.local } : {}), server: target.server });
    const client = new Client(await loadConfig(target.path ? { path: target.path } : {}), { name: 'opkit' });
    return { target, client };
  } catch (err) {
    await ports.release();
    throw err;
  }
}

/**
 * Applies the CRDs and, with webhooks, claims the run's configurations and converting CRDs (refused, before any
 * write, when another run or a deployment owns them); returns what it applied.
 */
async function applyRunObjects(run: Run): Promise<{ crds: number; configurations: number }> {
  const { client, webhooks, claims } = run;
  let crds = await crdObjects(run.dir);
  if (!webhooks) {
    await new Applier(client, 'opkit').applyAll(crds);
    return { crds: crds.length, configurations: 0 };
  }
  crds = crds.map((c) => pointWebhooksAt(c, webhooks.url, webhooks.caBundle));
  const owned = [...crds.filter(convertsByWebhook), ...webhooks.configurations];
  await claims.check(owned); // reads only: refuses what another run (or a deployment) owns
  await new Applier(client, 'opkit').applyAll(crds.filter((c) => !convertsByWebhook(c)));
  await claims.claim(owned);
  return { crds: crds.length, configurations: webhooks.configurations.length };
}

/** Gives back what the run holds but its webhook claims: the ports, the certificates' directory, the client. */
async function releaseRun(run: Run): Promise<void> {
  await run.ports.release();
  if (run.webhooks) await rm(run.webhooks.certDir, { recursive: true, force: true });
  run.client.close();
}

/** Runs the operator (commands/run-process.ts) until it exits; resolves the exit code `opkit run` ends with. */
function runOperator(run: Run, passThrough: readonly string[], out: (line: string) => void): Promise<number> {
  const { dir, target, webhooks } = run;
  // only what opkit chose goes into the operator's environment: the user's flags and variables stay in force
  const chosen = Object.fromEntries(run.ports.value.flatMap((e) => (e.set ? [[e.variable, e.set]] : [])));
  return runOperatorProcess(
    {
      file: join(dir, 'src/main.ts'),
      args: [...(target.path ? ['--kubeconfig', target.path] : []), ...passThrough],
      cwd: dir,
      env: { ...process.env, ...chosen, ...(webhooks ? { WEBHOOK_CERT_DIR: webhooks.certDir } : {}) },
    },
    out,
  );
}

/** After the operator stopped: this run's webhook configurations deleted, then everything the run holds released. */
async function endRun(run: Run, out: (line: string) => void): Promise<void> {
  try {
    if (run.webhooks) {
      // a stopped local operator must not block writes through failurePolicy: Fail — but only this run's go
      const { removed, left } = await run.claims.release();
      const configurations = removed.filter((r) => !r.startsWith('CustomResourceDefinition ')).length;
      out(`opkit: removed the ${configurations} webhook configuration(s) of this run`);
      for (const line of left) out(`opkit: ${line}`);
    }
  } finally {
    await releaseRun(run);
  }
}

/** `opkit run` (see the module comment): resolves the exit code. */
export async function runCommand(argv: readonly string[], out: (line: string) => void): Promise<number> {
  const { values, passThrough } = parseRunArgs(argv);
  if (values.help) {
    out(RUN_HELP);
    return 0;
  }
  const dir = resolve(values.dir);
  const project = await readProject(dir);
  const operatorHelp = passThrough.includes('--help') || passThrough.includes('-h');
  const ports = await reserveRunPorts(dir, argv, passThrough, operatorHelp, out);
  const { target, client } = await connect(values, ports, out);
  const webhook = ports.value.find((e) => e.role === 'webhook');
  const webhooks = webhook ? await localWebhooks(dir, webhook.port) : undefined;
  const claims = new RunClaims(client, newRunOwner(randomUUID(), new Date()));
  const run: Run = { dir, ports, target, client, webhooks, claims };
  try {
    const applied = await applyRunObjects(run);
    const served = webhooks ? ` and ${applied.configurations} webhook configuration(s), served at ${webhooks.url}` : '';
    out(`opkit: applied ${applied.crds} CRD(s)${served} to ${target.server}; running ${project.projectName}`);
    if (!operatorHelp) for (const line of describeEndpoints(ports.value)) out(`opkit: ${line}`);
  } catch (err) {
    await releaseRun(run);
    throw err;
  }
  const code = await runOperator(run, passThrough, out);
  await endRun(run, out);
  return code;
}

/** A CRD whose conversion goes through a webhook: `opkit run` points it at the local operator, and owns that. */
function convertsByWebhook(crd: KubeObject): boolean {
  return isCrd(crd) && crd.spec?.conversion?.strategy === 'Webhook';
}

const isCrd = (o: KubeObject): o is CustomResourceDefinition => o.kind === 'CustomResourceDefinition';

const webhookManifests = (dir: string) => join(dir, 'config/webhook/manifests.yaml');

interface LocalWebhooks {
  readonly url: string;
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
    caBundle,
    certDir,
    configurations: parseManifests(text, file).map((c) => pointWebhooksAt(c, url, caBundle)),
  };
}
