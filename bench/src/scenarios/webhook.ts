/**
 * @module scenarios/webhook
 * `npm run bench -- webhook`: admission requests at rising rates through the real apiserver to a validating webhook —
 * opkit's `WebhookServer` (bench/peers/opkit-webhook) and Go controller-runtime's webhook server
 * (bench/peers/go-webhook), doing the same check — one after the other on one control plane, order rotating per
 * repetition. The Go server runs twice: as kubebuilder's scaffold serves it, HTTP/1.1 only (`go`, the peer the ratios
 * are taken against), and offering HTTP/2 (`goH2`). The apiserver speaks HTTP/2 to a webhook only when the webhook's
 * URL is a loopback address, as here, and the server offers it; a webhook behind a Service is always called over
 * HTTP/1.1, which is all opkit's server speaks. Each request is a dry-run create of a Widget (nothing is stored; the
 * apiserver still calls the webhook), sent open-loop at the rate (a request does not wait for the previous one).
 * Latency is measured by the client, end to end; the apiserver's own part is the same for every system, so the
 * difference is the webhook's.
 *
 * Figures per system and rate: p50 and p99 (ms, median over repetitions), failures, and the highest rate whose p99
 * stays ≤ 10 ms; ratios opkit / Go.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeObject } from '@opkit/runtime';
import { Client, loadConfig, resource } from '@opkit/runtime/client';
import { CustomResourceDefinitions } from '@opkit/runtime/kinds';
import { createCertificateAuthority, issueServingCertificate } from '@opkit/runtime/tls';
import { start } from '@opkit/testenv';
import { goBinary } from '../peers.ts';
import { round, summarize } from '../stats.ts';

export type WebhookSystem = 'opkit' | 'go' | 'goH2';
const SYSTEMS: readonly WebhookSystem[] = ['opkit', 'go', 'goH2'];

export interface WebhookOptions {
  readonly rates: readonly number[];
  readonly seconds: number;
  readonly repeat: number;
  readonly log: (line: string) => void;
}

export interface RatePoint {
  readonly rate: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly failures: number;
  readonly sent: number;
}

export interface WebhookResult {
  readonly systems: Record<WebhookSystem, RatePoint[]>;
  /** Highest rate whose p99 ≤ 10 ms (0: none). */
  readonly maxRateP99Under10ms: Record<WebhookSystem, number>;
  readonly repeat: number;
  readonly seconds: number;
}

const OPKIT_SERVER = fileURLToPath(new URL('../../peers/opkit-webhook/server.ts', import.meta.url));
const GO_DIR = fileURLToPath(new URL('../../peers/go-webhook/', import.meta.url));

type Widget = KubeObject & { spec: { replicas: number; image: string } };
const Widgets = resource<Widget>({
  group: 'bench.opkit.dev',
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  namespaced: true,
});
const Configs = resource({
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  kind: 'ValidatingWebhookConfiguration',
  plural: 'validatingwebhookconfigurations',
  namespaced: false,
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export async function webhookScenario(o: WebhookOptions): Promise<WebhookResult> {
  const goBin = await goBinary(GO_DIR, 'webhook-go', o.log);
  const env = await start({ nodes: 1, log: () => {} });
  const certDir = await mkdtemp(join(tmpdir(), 'opkit-bench-webhook-'));
  const client = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'bench-webhook' });
  try {
    const ca = createCertificateAuthority('bench-webhook-ca');
    const pair = issueServingCertificate(ca, ['127.0.0.1']);
    await writeFile(join(certDir, 'tls.crt'), pair.certPem);
    await writeFile(join(certDir, 'tls.key'), pair.keyPem);
    await installCrd(client);
    const samples: Record<WebhookSystem, Map<number, RatePoint[]>> = {
      opkit: new Map(),
      go: new Map(),
      goH2: new Map(),
    };
    for (let rep = 0; rep < o.repeat; rep++) {
      const order = SYSTEMS.map((_, i) => SYSTEMS[(i + rep) % SYSTEMS.length] as WebhookSystem);
      for (const system of order) {
        const port = await freePort();
        const args = ['--port', String(port), '--cert-dir', certDir];
        const proc =
          system === 'opkit'
            ? spawn(process.execPath, [OPKIT_SERVER, ...args], { stdio: 'inherit' })
            : spawn(goBin, [...args, ...(system === 'goH2' ? ['--http2'] : [])], { stdio: 'inherit' });
        try {
          await configure(client, port, Buffer.from(ca.certPem).toString('base64'));
          await until(async () => (await send(client, 0)).ok, 30_000, `${system} webhook to answer`);
          for (let i = 0; i < 200; i++) await send(client, i); // warm-up: connections, JIT
          for (const rate of o.rates) {
            const point = await atRate(client, rate, o.seconds);
            o.log(
              `${system} rep ${rep + 1}: ${rate}/s → p50 ${point.p50Ms} ms, p99 ${point.p99Ms} ms, ${point.failures} failed`,
            );
            samples[system].set(rate, [...(samples[system].get(rate) ?? []), point]);
          }
        } finally {
          await stopProcess(proc);
          await client.delete(Configs, { name: 'bench-webhook' }).catch(() => undefined);
        }
      }
    }
    const systems = {} as Record<WebhookSystem, RatePoint[]>;
    const maxRate = {} as Record<WebhookSystem, number>;
    for (const system of SYSTEMS) {
      systems[system] = o.rates.map((rate) => {
        const points = samples[system].get(rate) ?? [];
        return {
          rate,
          p50Ms: round(summarize(points.map((p) => p.p50Ms)).median),
          p99Ms: round(summarize(points.map((p) => p.p99Ms)).median),
          failures: points.reduce((n, p) => n + p.failures, 0),
          sent: points.reduce((n, p) => n + p.sent, 0),
        };
      });
      maxRate[system] = Math.max(
        0,
        ...systems[system].filter((p) => p.p99Ms <= 10 && p.failures === 0).map((p) => p.rate),
      );
    }
    return { systems, maxRateP99Under10ms: maxRate, repeat: o.repeat, seconds: o.seconds };
  } finally {
    client.close();
    await env.stop();
    await rm(certDir, { recursive: true, force: true });
  }
}

async function installCrd(client: Client): Promise<void> {
  await client.create(CustomResourceDefinitions, {
    metadata: { name: 'widgets.bench.opkit.dev' },
    spec: {
      group: 'bench.opkit.dev',
      names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  } as never);
  await until(
    async () =>
      client
        .list(Widgets, { namespace: 'default' })
        .then(() => true)
        .catch(() => false),
    30_000,
    'the Widget CRD to be served',
  );
}

async function configure(client: Client, port: number, caBundle: string): Promise<void> {
  await client.delete(Configs, { name: 'bench-webhook' }).catch(() => undefined);
  await client.create(Configs, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'bench-webhook' },
    webhooks: [
      {
        name: 'vwidget.bench.opkit.dev',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        failurePolicy: 'Fail',
        timeoutSeconds: 10,
        clientConfig: { url: `https://127.0.0.1:${port}/validate`, caBundle },
        rules: [
          { apiGroups: ['bench.opkit.dev'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['widgets'] },
        ],
      },
    ],
  } as never);
}

async function send(client: Client, i: number): Promise<{ ok: boolean; ms: number }> {
  const t0 = performance.now();
  const ok = await client
    .create(
      Widgets,
      { metadata: { name: `w${i}`, namespace: 'default' }, spec: { replicas: i % 50, image: 'nginx:1.27' } } as Widget,
      { dryRun: true },
    )
    .then(
      () => true,
      () => false,
    );
  return { ok, ms: performance.now() - t0 };
}

/** Open loop: one request every 1/rate s for `seconds`, each timed on its own. */
async function atRate(client: Client, rate: number, seconds: number): Promise<RatePoint> {
  const total = rate * seconds;
  const started = performance.now();
  const pending: Promise<{ ok: boolean; ms: number }>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    pending.push(send(client, i));
  }
  const results = await Promise.all(pending);
  const ms = results
    .filter((r) => r.ok)
    .map((r) => r.ms)
    .sort((a, b) => a - b);
  const q = (p: number) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] ?? 0;
  return {
    rate,
    p50Ms: round(q(0.5)),
    p99Ms: round(q(0.99)),
    failures: results.length - ms.length,
    sent: results.length,
  };
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function stopProcess(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise((resolve) => p.once('exit', resolve));
  p.kill('SIGTERM');
  await exited;
}

export function webhookMarkdown(r: WebhookResult): string {
  const lines = [
    `Validating webhook through the apiserver (dry-run creates, open loop, ${r.seconds} s per rate, median of ${r.repeat}); latency end to end, ms.`,
    '',
    'Go is controller-runtime as kubebuilder scaffolds it (HTTP/1.1, as every webhook behind a Service is called);',
    'Go h2 offers HTTP/2 as well, which the apiserver uses only for a loopback URL such as this one.',
    '',
    '| rate (req/s) | opkit p50 | opkit p99 | Go p50 | Go p99 | Go h2 p50 | Go h2 p99 | p50 opkit/Go | p99 opkit/Go | failures (opkit / Go / Go h2) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const [i, ours] of r.systems.opkit.entries()) {
    const go = r.systems.go[i] as RatePoint;
    const h2 = r.systems.goH2[i] as RatePoint;
    const ratio = (a: number, b: number) => (b > 0 ? round(a / b) : 0);
    lines.push(
      `| ${ours.rate} | ${ours.p50Ms} | ${ours.p99Ms} | ${go.p50Ms} | ${go.p99Ms} | ${h2.p50Ms} | ${h2.p99Ms} | ${ratio(ours.p50Ms, go.p50Ms)}× | ${ratio(ours.p99Ms, go.p99Ms)}× | ${ours.failures} / ${go.failures} / ${h2.failures} |`,
    );
  }
  const max = r.maxRateP99Under10ms;
  lines.push('', `Highest rate with p99 ≤ 10 ms: opkit ${max.opkit}/s, Go ${max.go}/s, Go h2 ${max.goH2}/s.`);
  return `${lines.join('\n')}\n`;
}
