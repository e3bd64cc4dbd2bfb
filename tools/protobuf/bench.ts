/**
 * @module tools/protobuf/bench
 * `node tools/protobuf/bench.ts [pods]`: the client-side cost of reading a pod list, per object, as JSON
 * (`JSON.parse` of the UTF-8 body, as the client did before) and as protobuf: the generated decoders, whole and with
 * the cache's default mask that skips managedFields, and `@bufbuild/protobuf` over core/v1's descriptor set
 * (src/bufbuild.ts), to messages and then to protobuf's JSON mapping. It starts a testenv control plane, creates the pods (kwok runs
 * them, so they carry status and managedFields as a real cluster's do), fetches the list once in each encoding, and
 * decodes each body repeatedly in this process (medians of 15 rounds after 5 of warm-up). Prints one JSON line.
 * `OPKIT_BENCH_DUMP=FILE` also writes the protobuf body to FILE, for a profile of the decoders alone.
 */
import { request } from 'node:https';
import { start } from '@opkit/testenv';
import { dropManagedFields, maskOf } from '../../packages/runtime/src/cache/transform.ts';
import { Pods } from '../../packages/runtime/src/client/builtins.ts';
import { Client, loadConfig } from '../../packages/runtime/src/client/index.ts';
import { decodeEnvelope, load, PROTOBUF } from '../../packages/runtime/src/client/protobuf/codec.ts';
import { bufbuildDecoder } from './src/bufbuild.ts';

const count = Number(process.argv[2] ?? 2000);
const env = await start({ nodes: 2, log: () => {} });
try {
  const config = await loadConfig({ path: env.kubeconfigPath });
  const client = new Client(config, { name: 'protobuf-bench' });
  await client.transport.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: 'b' } } });
  for (let i = 0; i < count; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, count - i) }, (_, j) =>
        client.create(Pods, {
          metadata: { name: `p-${i + j}`, namespace: 'b', labels: { app: 'bench', index: String(i + j) } },
          spec: { containers: [{ name: 'c', image: 'registry.example/app:1', args: ['--port', '8080'] }] },
        }),
      ),
    );
  }
  // let kwok give them status
  await new Promise((r) => setTimeout(r, 5000));
  const creds = await config.auth.credentials();
  const raw = (accept: string) =>
    new Promise<Buffer>((resolve, reject) => {
      const url = new URL('/api/v1/namespaces/b/pods', config.server);
      const req = request(url, {
        headers: { ...creds.headers, accept },
        ...(config.ca ? { ca: config.ca } : {}),
        ...(creds.cert ? { cert: creds.cert, key: creds.key } : {}),
        rejectUnauthorized: !config.insecureSkipTlsVerify,
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks)));
      });
      req.on('error', reject);
      req.end();
    });
  const json = await raw('application/json');
  const proto = await raw(PROTOBUF);
  if (process.env.OPKIT_BENCH_DUMP) (await import('node:fs')).writeFileSync(process.env.OPKIT_BENCH_DUMP, proto);
  client.close();
  await load('v1', 'Pod', 'PodList');
  const items = (decodeEnvelope(proto).items as unknown[]).length;
  const mask = maskOf(dropManagedFields);
  const listMask = mask && { rest: true, fields: new Map([['items', mask]]) };
  const time = (fn: () => unknown) => {
    const rounds: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t = performance.now();
      fn();
      if (i >= 5) rounds.push(performance.now() - t);
    }
    rounds.sort((a, b) => a - b);
    return ((rounds[Math.floor(rounds.length / 2)] as number) * 1000) / items;
  };
  const jsonUs = time(() => JSON.parse(json.toString('utf8')));
  const protoUs = time(() => decodeEnvelope(proto));
  const maskedUs = time(() => decodeEnvelope(proto, listMask));
  const bufbuild = bufbuildDecoder('PodList');
  const bufbuildItems = ((bufbuild.decode(proto) as { items?: unknown[] }).items ?? []).length;
  if (bufbuildItems !== items)
    throw new Error(`@bufbuild/protobuf decoded ${bufbuildItems} pods, the decoders ${items}`);
  const bufbuildUs = time(() => bufbuild.decode(proto));
  const bufbuildJsonUs = time(() => bufbuild.decodeToJson(proto));
  process.stdout.write(
    `${JSON.stringify({
      pods: items,
      bytesPerPod: { json: Math.round(json.length / items), protobuf: Math.round(proto.length / items) },
      usPerPod: {
        json: +jsonUs.toFixed(2),
        protobuf: +protoUs.toFixed(2),
        protobufMasked: +maskedUs.toFixed(2),
        bufbuild: +bufbuildUs.toFixed(2),
        bufbuildToJson: +bufbuildJsonUs.toFixed(2),
      },
      ratio: {
        protobuf: +(protoUs / jsonUs).toFixed(3),
        protobufMasked: +(maskedUs / jsonUs).toFixed(3),
        bufbuild: +(bufbuildUs / jsonUs).toFixed(3),
        bufbuildToJson: +(bufbuildJsonUs / jsonUs).toFixed(3),
      },
    })}\n`,
  );
} finally {
  await env.stop();
}
