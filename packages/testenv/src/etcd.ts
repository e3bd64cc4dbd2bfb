/**
 * @module etcd
 * Reads and compacts an environment's etcd through its HTTP gateway (the v3 JSON API) on loopback: what the apiserver
 * really stored for a key, and a compaction that makes an old resourceVersion 410 Gone.
 *
 * Guarantees: a request answers within 10 s or fails; every failure is a `TestenvError` `ApiRequestFailed` naming the
 * URL (a timeout, a connection error as its `cause`, or a status other than 200 with etcd's answer).
 */
import { request as httpRequest } from 'node:http';
import { TestenvError } from './errors.ts';

/**
 * The JSON etcd at `etcdUrl` stores for `key`, or undefined when there is none (the apiserver stores custom resources
 * as JSON).
 */
export async function etcdValue(etcdUrl: string, key: string): Promise<unknown> {
  const range = JSON.parse(await postText(`${etcdUrl}/v3/kv/range`, { key: Buffer.from(key).toString('base64') })) as {
    kvs?: { value?: string }[];
  };
  const value = range.kvs?.[0]?.value;
  return value === undefined ? undefined : (JSON.parse(Buffer.from(value, 'base64').toString('utf8')) as unknown);
}

/** Compacts the history of etcd at `etcdUrl` up to its current revision (physically); returns that revision. */
export async function compactEtcd(etcdUrl: string): Promise<number> {
  const range = JSON.parse(await postText(`${etcdUrl}/v3/kv/range`, { key: Buffer.from('/').toString('base64') })) as {
    header?: { revision?: string };
  };
  const revision = Number(range.header?.revision);
  if (!Number.isInteger(revision) || revision <= 0) {
    throw new TestenvError('ApiRequestFailed', `etcd reported no revision: ${JSON.stringify(range)}`);
  }
  await postText(`${etcdUrl}/v3/kv/compaction`, { revision: String(revision), physical: true });
  return revision;
}

/** POST JSON to etcd's HTTP gateway on loopback; resolves with the body of a 200, rejects otherwise. */
function postText(url: string, body: unknown): Promise<string> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', timeout: 10_000, headers: { 'content-type': 'application/json' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode === 200) resolve(text);
          else reject(new TestenvError('ApiRequestFailed', `POST ${url} answered ${res.statusCode}: ${text}`));
        });
        res.on('error', (err) => reject(failure(url, err)));
      },
    );
    req.on('timeout', () => req.destroy(new TestenvError('ApiRequestFailed', `POST ${url}: no answer within 10 s`)));
    req.on('error', (err) => reject(failure(url, err)));
    req.end(payload);
  });
}

function failure(url: string, err: Error): TestenvError {
  if (err instanceof TestenvError) return err;
  return new TestenvError('ApiRequestFailed', `POST ${url} failed: ${err.message}`, { cause: err });
}
