import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ApiClient } from './api.ts';
import { createLoopbackServingPki } from './certs.ts';

test('a DELETE with a body is framed by its length: the next request on the kept-alive connection is read whole', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-api-'));
  const pki = await createLoopbackServingPki(dir);
  const seen: string[] = [];
  const server = createServer({ cert: pki.serving.certPem, key: pki.serving.keyPem }, (req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (c: string) => (body += c));
    req.on('end', () => {
      seen.push(`${req.method} ${req.url} ${req.headers['content-length'] ?? '-'} ${body}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const api = new ApiClient(`https://127.0.0.1:${port}`, pki.ca.certPem);
  try {
    const options = { propagationPolicy: 'Background', note: 'ü' };
    assert.equal((await api.request({ method: 'DELETE', path: '/api/v1/namespaces/a', body: options })).status, 200);
    assert.equal((await api.request({ method: 'PATCH', path: '/api/v1/namespaces/b', body: {} })).status, 200);
    const length = Buffer.byteLength(JSON.stringify(options));
    assert.deepEqual(seen, [
      `DELETE /api/v1/namespaces/a ${length} ${JSON.stringify(options)}`,
      'PATCH /api/v1/namespaces/b 2 {}',
    ]);
  } finally {
    api.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  }
});
