/**
 * @module children/bare-restart
 * The limit of a restart, for `npm run bench -- restart-limit`: what a restarted AppService operator must do before
 * it reconciles, with nothing else — list the AppServices and the pods of the `bench` namespace (JSON over
 * `node:https`, no library, nothing cached), watch AppServices from the list's resourceVersion, and write the status
 * of the probe AppService (BARE_PROBE) as soon as it is seen. Connection from BARE_SERVER, BARE_CA and BARE_TOKEN.
 */
import { Agent, request as httpsRequest } from 'node:https';

interface Item {
  metadata: { name: string; generation?: number; resourceVersion?: string };
}
interface List {
  metadata: { resourceVersion: string };
  items: Item[];
}

const { BARE_SERVER: server, BARE_CA: ca, BARE_TOKEN: token, BARE_PROBE: probe } = process.env;
if (!server || !token || !probe) throw new Error('bare-restart: BARE_SERVER, BARE_TOKEN and BARE_PROBE are required');
const agent = new Agent({ ca, keepAlive: true });
const BASE = '/apis/app.example.com/v1alpha1/namespaces/bench/appservices';

/** One request; the parsed JSON answer, or with `onData` each chunk of a streamed answer. */
function request<T>(method: string, path: string, body?: string, onData?: (chunk: string) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    const url = new URL(server + path);
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (body) headers['content-type'] = 'application/merge-patch+json';
    const req = httpsRequest(
      { method, hostname: url.hostname, port: url.port, path: url.pathname + url.search, agent, headers },
      (res) => {
        if (onData) {
          res.setEncoding('utf8').on('data', onData);
          res.on('end', () => resolve(undefined as T));
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if ((res.statusCode ?? 500) < 300) resolve(JSON.parse(text) as T);
          else reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`));
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const [apps] = await Promise.all([request<List>('GET', BASE), request<List>('GET', '/api/v1/namespaces/bench/pods')]);
let done = false;
async function reconcile(app: Item): Promise<void> {
  done = true;
  const status = { observedGeneration: app.metadata.generation, replicas: 0, readyReplicas: 0, podNames: [] };
  await request('PATCH', `${BASE}/${probe}/status`, JSON.stringify({ status }));
}
const listed = apps.items.find((a) => a.metadata.name === probe);
if (listed) await reconcile(listed);
let pending = '';
await request('GET', `${BASE}?watch=1&resourceVersion=${apps.metadata.resourceVersion}`, undefined, (chunk) => {
  pending += chunk;
  for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
    const event = JSON.parse(pending.slice(0, nl)) as { type: string; object: Item };
    pending = pending.slice(nl + 1);
    if (!done && event.type === 'ADDED' && event.object.metadata.name === probe) void reconcile(event.object);
  }
});
