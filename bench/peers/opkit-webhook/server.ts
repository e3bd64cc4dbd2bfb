/**
 * The opkit side of `npm run bench -- webhook`: the same validating webhook as bench/peers/go-webhook —
 * spec.replicas at most 100 (a field error), a warning for an image without a tag — on @opkit/runtime's
 * WebhookServer with the pair from --cert-dir. Usage: server.ts --port N --cert-dir DIR
 */
import { parseArgs } from 'node:util';
import type { KubeObject } from '@opkit/runtime';
import { resource } from '@opkit/runtime/client';
import { FileCertificates } from '@opkit/runtime/tls';
import { fieldErrors, validator, WebhookServer } from '@opkit/runtime/webhook';

interface Widget extends KubeObject {
  spec?: { replicas?: number; image?: string };
}
const Widgets = resource<Widget>({
  group: 'bench.opkit.dev',
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  namespaced: true,
});

const { values } = parseArgs({ options: { port: { type: 'string' }, 'cert-dir': { type: 'string' } } });
const server = new WebhookServer({
  bindAddress: `127.0.0.1:${values.port ?? '9443'}`,
  certificates: new FileCertificates({ dir: values['cert-dir'] ?? '.' }),
});
server.admission(
  '/validate',
  validator(Widgets, {
    create: (w) => ({
      errors:
        (w.spec?.replicas ?? 0) > 100
          ? [fieldErrors.invalid('spec.replicas', w.spec?.replicas, 'must be at most 100')]
          : [],
      warnings: (w.spec?.image ?? '').includes(':') ? [] : [`spec.image ${JSON.stringify(w.spec?.image)} has no tag`],
    }),
  }),
);
const stop = new AbortController();
process.once('SIGTERM', () => stop.abort());
process.once('SIGINT', () => stop.abort());
await server.start(stop.signal);
