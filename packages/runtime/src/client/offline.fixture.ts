/**
 * Test fixture (not built or shipped): a client that is never asked anything (its server's port is closed), for unit
 * tests that build caches, informers and controllers without starting a watch.
 */
import { Client } from './client.ts';

/** A client of namespace `namespace` whose server is never reached. */
export function offlineClient(namespace = 'ns'): Client {
  return new Client({
    server: 'http://127.0.0.1:9', // never asked: nothing is watched
    auth: { credentials: async () => ({ headers: {} }), invalidate() {} },
    namespace,
    contextName: 'test',
  });
}
