/**
 * @module local-webhooks
 * The webhook server `installApiAndRbac` runs for local runs and tests, in a worker thread of the calling process:
 * its own event loop keeps answering the apiserver while the main thread blocks (a test waiting on `spawnSync`
 * kubectl, which may itself wait on a write that needs the webhook). It makes a CA and a serving certificate for
 * 127.0.0.1, serves the operator's webhooks and conversions on a free port, and posts `{ url, caBundle }` to its
 * parent. Started again with `workerData` `{ port, ca }`, it serves on the same port with the same CA (chaos:
 * `webhook-down`).
 *
 * Caveat: the worker has no credentials, so the registry allow-list (which reads Namespaces) allows every image here;
 * the operator's own webhook server enforces it (as in test/webhooks.test.ts, on a test manager).
 */
import { parentPort, workerData } from 'node:worker_threads';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  issueServingCertificate,
  StaticCertificates,
} from '@opkit/runtime/tls';
import { serveWebhooks, WebhookServer } from '@opkit/runtime/webhook';
import { conversions, webhooks } from './webhooks.ts';

export interface LocalWebhooksReady {
  readonly url: string;
  readonly caBundle: string;
  readonly port: number;
  /** The CA, so that a restarted server (`workerData`) is trusted by the same configurations. */
  readonly ca: CertificateAuthority;
}

/** What a restarted server reuses: its port and CA. */
export interface LocalWebhooksData {
  readonly port: number;
  readonly ca: CertificateAuthority;
}

if (parentPort) {
  const port = parentPort;
  const again = workerData as LocalWebhooksData | undefined;
  const ca = again?.ca ?? createCertificateAuthority('appservice-operator-local-webhook-ca');
  const server = new WebhookServer({
    bindAddress: `127.0.0.1:${again?.port ?? 0}`,
    certificates: new StaticCertificates(issueServingCertificate(ca, ['127.0.0.1', 'localhost'])),
  });
  serveWebhooks(
    server,
    webhooks(async () => undefined),
    conversions,
  );
  const stop = new AbortController();
  port.on('message', (m: unknown) => {
    if (m === 'stop') stop.abort();
  });
  // a server that cannot start rejects start(): left uncaught, it ends the worker with that error, which is what the
  // parent's 'error' listener reports (listening rejects with the same error, so its chain below ignores it)
  void server.start(stop.signal).then(() => port.close());
  server.listening.then(
    () => {
      const ready: LocalWebhooksReady = {
        url: `https://127.0.0.1:${server.port}`,
        caBundle: Buffer.from(ca.certPem).toString('base64'),
        port: server.port,
        ca,
      };
      port.postMessage(ready);
    },
    () => {},
  );
}
