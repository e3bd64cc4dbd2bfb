/**
 * Edge cases of list-and-watch that a real apiserver cannot be made to produce on demand (a watch that answers 410
 * forever, a resourceVersion too large, a continue token that expires between two pages, a watch that goes silent,
 * a server that refuses or ignores streaming lists), played by a tiny scripted HTTP server.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { type ConfigMap, ConfigMaps } from '../client/builtins.ts';
import { Client } from '../client/client.ts';
import type { ObjectList } from '../client/types.ts';
import type { LogFields, Logger } from '../logger.ts';
import { silentLogger } from '../logger.ts';
import type { WatchMetrics } from '../metrics.ts';
import { Reflector, type ReflectorOptions } from './reflector.ts';
import { Store } from './store.ts';

/** One request the fake apiserver received. */
interface Seen {
  readonly verb: 'LIST' | 'WATCH';
  readonly query: URLSearchParams;
  /** performance.now() on arrival. */
  readonly at: number;
}

/** How the fake apiserver answers a list or watch of /api/v1/configmaps. */
type Answer = (res: ServerResponse, seen: Seen, nth: number) => void;

interface FakeApiserver {
  readonly client: Client;
  readonly requests: Seen[];
  lists(): Seen[];
  watches(): Seen[];
  close(): Promise<void>;
}

async function fakeApiserver(script: { list: Answer; watch: Answer }): Promise<FakeApiserver> {
  const requests: Seen[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method !== 'GET' || url.pathname !== '/api/v1/configmaps') {
      sendJson(res, 404, status(404, 'NotFound', `${req.method} ${url.pathname} is not scripted`));
      return;
    }
    const verb = url.searchParams.get('watch') === '1' ? 'WATCH' : 'LIST';
    const seen: Seen = { verb, query: url.searchParams, at: performance.now() };
    requests.push(seen);
    const nth = requests.filter((r) => r.verb === verb).length;
    (verb === 'WATCH' ? script.watch : script.list)(res, seen, nth);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const client = new Client({
    server: `http://127.0.0.1:${port}`,
    auth: { credentials: async () => ({ headers: {} }), invalidate() {} },
    namespace: 'default',
    contextName: 'test',
  });
  return {
    client,
    requests,
    lists: () => requests.filter((r) => r.verb === 'LIST'),
    watches: () => requests.filter((r) => r.verb === 'WATCH'),
    async close() {
      client.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function status(code: number, reason: string, message: string, causes?: { reason: string; message: string }[]) {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
    ...(causes ? { details: { causes } } : {}),
  };
}

function sendJson(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function configMap(name: string, resourceVersion: string): ConfigMap {
  return { metadata: { namespace: 'default', name, resourceVersion, uid: `uid-${name}` }, data: { name } };
}

/** A list response as the apiserver sends it (items without kind and apiVersion). */
function listBody(resourceVersion: string, names: readonly string[], cont?: string): ObjectList<ConfigMap> {
  return {
    metadata: { resourceVersion, ...(cont === undefined ? {} : { continue: cont }) },
    items: names.map((n, i) => configMap(n, `${i + 1}`)),
  };
}

/** A watch that opens (200, headers sent) and then says nothing until the client goes away. */
function silentWatch(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.flushHeaders();
}

/** A watch that opens and at once reports 410 Expired as an ERROR event, as the apiserver does. */
function expiredWatch(res: ServerResponse, seen: Seen): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  const expired = status(410, 'Expired', `too old resource version: ${seen.query.get('resourceVersion')} (1000)`);
  res.end(`${JSON.stringify({ type: 'ERROR', object: expired })}\n`);
}

/** Records what the reflector reports. */
class RecordingMetrics implements WatchMetrics {
  readonly restarts: string[] = [];
  readonly failures: string[] = [];
  readonly events: string[] = [];
  relists = 0;

  restarted(reason: string): void {
    this.restarts.push(reason);
  }

  relisted(): void {
    this.relists += 1;
  }

  event(type: string): void {
    this.events.push(type);
  }

  failed(code: string): void {
    this.failures.push(code);
  }
}

/** A logger that keeps every entry. */
function recordingLogger(): { log: Logger; entries: { level: string; fields: LogFields; message: string }[] } {
  const entries: { level: string; fields: LogFields; message: string }[] = [];
  const at =
    (level: string) =>
    (fields: LogFields, message: string): void => {
      entries.push({ level, fields, message });
    };
  const log: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log };
  return { log, entries };
}

/** Runs a reflector of ConfigMaps in all namespaces until `stop()`. */
function runReflector(
  api: FakeApiserver,
  options: Partial<Omit<ReflectorOptions<ConfigMap>, 'client' | 'resource'>> = {},
): { reflector: Reflector<ConfigMap>; store: Store<ConfigMap>; stop: () => Promise<void> } {
  const store = new Store<ConfigMap>();
  const reflector = new Reflector<ConfigMap>(
    // these scripts play paginated lists; the streaming-list tests ask for `stream` themselves
    { client: api.client, resource: ConfigMaps, log: silentLogger, listMode: 'paged', ...options },
    store,
  );
  const controller = new AbortController();
  const running = reflector.run(controller.signal);
  return {
    reflector,
    store,
    async stop() {
      controller.abort();
      await running;
    },
  };
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `condition` every 10 ms of real time; fails the test after `limitMs`. */
async function waitFor(condition: () => boolean, limitMs: number, what: string): Promise<void> {
  const until = performance.now() + limitMs;
  while (!condition()) {
    if (performance.now() > until) assert.fail(`${what}: not within ${limitMs} ms`);
    await delay(10);
  }
}

/** The gaps in ms between consecutive requests. */
function gaps(seen: readonly Seen[]): number[] {
  return seen.slice(1).map((s, i) => s.at - (seen[i] as Seen).at);
}

test('a watch that always answers 410 Gone does not drive a tight relist loop (default pacing)', async () => {
  const api = await fakeApiserver({
    list: (res, _seen, nth) => sendJson(res, 200, listBody(`${1000 + nth}`, ['a'])),
    watch: expiredWatch,
  });
  const metrics = new RecordingMetrics();
  const r = runReflector(api, { metrics });
  try {
    await delay(3_000);
  } finally {
    await r.stop();
    await api.close();
  }
  const lists = api.lists().length;
  // 0 s, at once (the first relist after a healthy period), +0.8–1.6 s, +1.6–3.2 s: at most 4 in 3 s
  assert.ok(lists >= 3, `it kept relisting (${lists} lists)`);
  assert.ok(lists <= 6, `${lists} lists in 3 s: the relists are paced`);
  assert.ok(api.watches().length <= lists, 'one watch per list at most');
  assert.ok(metrics.restarts.every((r) => r === 'gone'));
  assert.equal(r.reflector.synced, true);
});

test('a watch that delivers one event and then 410 each time is paced too (an event alone is not health)', async () => {
  const api = await fakeApiserver({
    list: (res, _seen, nth) => sendJson(res, 200, listBody(`${1000 + nth}`, ['a'])),
    watch: (res, seen) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const modified = { ...configMap('a', `${Number(seen.query.get('resourceVersion')) + 1}`), data: { n: '2' } };
      const expired = status(410, 'Expired', 'too old resource version');
      res.end(
        `${JSON.stringify({ type: 'MODIFIED', object: modified })}\n${JSON.stringify({ type: 'ERROR', object: expired })}\n`,
      );
    },
  });
  const r = runReflector(api);
  try {
    await delay(1_500);
  } finally {
    await r.stop();
    await api.close();
  }
  assert.ok(api.lists().length <= 4, `${api.lists().length} lists in 1.5 s`);
});

test('relist pacing is configurable: relistBackoff 200 ms doubling to 400 ms without jitter', async () => {
  const api = await fakeApiserver({
    list: (res, _seen, nth) => sendJson(res, 200, listBody(`${1000 + nth}`, ['a'])),
    watch: expiredWatch,
  });
  const r = runReflector(api, { relistBackoff: { initialMs: 200, maxMs: 400, jitter: 0 } });
  try {
    await delay(1_500);
  } finally {
    await r.stop();
    await api.close();
  }
  // lists at 0, at once, +200, +400, +400, … : 0, 0, 0.2, 0.6, 1.0, 1.4 s — 6 in 1.5 s (fewer on a slow machine)
  const lists = api.lists();
  assert.ok(lists.length >= 4 && lists.length <= 7, `${lists.length} lists in 1.5 s`);
  const [first, second, ...rest] = gaps(lists);
  assert.ok(first !== undefined && first < 190, `the first relist after a healthy period is immediate (${first} ms)`);
  assert.ok(second !== undefined && second >= 195, `the second waits initialMs (${second} ms)`);
  for (const gap of rest) assert.ok(gap >= 395, `later ones wait maxMs (${gap} ms)`);
});

test('a watch answered 504 ResourceVersionTooLarge leads to a fresh list, and the next watch uses its resourceVersion', async () => {
  const api = await fakeApiserver({
    list: (res, _seen, nth) => sendJson(res, 200, listBody(nth === 1 ? '100' : '200', ['a', 'b'])),
    watch: (res, seen) => {
      if (seen.query.get('resourceVersion') === '100') {
        const tooLarge = 'Too large resource version';
        sendJson(res, 504, {
          kind: 'Status',
          code: 504,
          reason: 'Timeout',
          message: tooLarge,
          details: { causes: [{ reason: 'ResourceVersionTooLarge', message: tooLarge }] },
        });
      } else silentWatch(res);
    },
  });
  const metrics = new RecordingMetrics();
  const r = runReflector(api, { metrics });
  try {
    await waitFor(() => api.watches().length >= 2, 2_000, 'a watch after a second list');
  } finally {
    await r.stop();
    await api.close();
  }
  const [firstList, secondList] = api.lists();
  assert.equal(api.lists().length, 2, 'exactly one relist');
  assert.ok(firstList !== undefined && secondList !== undefined);
  assert.equal(secondList.query.get('resourceVersion'), null, 'the relist asks for the newest state, not an old rv');
  assert.deepEqual(
    api.watches().map((w) => w.query.get('resourceVersion')),
    ['100', '200'],
    'the watch is not retried with the too-large resourceVersion; the next one starts from the new list',
  );
  assert.ok(secondList.at < (api.watches()[1] as Seen).at);
  assert.ok(metrics.failures.includes('Timeout'));
  assert.equal(metrics.relists, 2);
});

/**
 * Page 1 (a, b) comes with a continue token; the continued request answers 410 Expired; the unpaginated list is the
 * newer state: b was deleted and e created meanwhile, so nothing of the dropped page may survive.
 */
const PAGE_1 = ['a', 'b'];
const FULL = ['a', 'c', 'd', 'e'];
function expiringPagesServer(): Promise<FakeApiserver> {
  return fakeApiserver({
    list: (res, seen) => {
      const limit = seen.query.get('limit');
      const cont = seen.query.get('continue');
      if (cont === 'page-2-token') {
        sendJson(
          res,
          410,
          status(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result.'),
        );
      } else if (limit !== null) sendJson(res, 200, listBody('5', PAGE_1.slice(0, Number(limit)), 'page-2-token'));
      else sendJson(res, 200, listBody('7', FULL));
    },
    watch: silentWatch,
  });
}

test('client.list falls back to one unpaginated list when the continue token expires, without duplicates', async () => {
  const api = await expiringPagesServer();
  try {
    const list = await api.client.list(ConfigMaps, { pageSize: 2 });
    assert.deepEqual(
      list.items.map((i) => i.metadata.name),
      FULL,
      'exactly the full list: the first page is dropped (no duplicate a, no deleted b)',
    );
    assert.equal(list.metadata.resourceVersion, '7');
    assert.ok(list.items.every((i) => i.kind === 'ConfigMap' && i.apiVersion === 'v1'));
    const queries = api.lists().map((l) => Object.fromEntries(l.query));
    assert.deepEqual(queries, [{ limit: '2' }, { limit: '2', continue: 'page-2-token' }, {}]);

    const pages: ObjectList<ConfigMap>[] = [];
    for await (const page of api.client.listPages(ConfigMaps, { pageSize: 2 })) pages.push(page);
    assert.deepEqual(
      pages.map((p) => ({ names: p.items.map((i) => i.metadata.name), restart: p.restart ?? false })),
      [
        { names: PAGE_1, restart: false },
        { names: FULL, restart: true },
      ],
      'the fallback page is marked restart: true',
    );
  } finally {
    await api.close();
  }
});

test('the reflector stores exactly the full list when the continue token expires mid-list', async () => {
  const api = await expiringPagesServer();
  const r = runReflector(api, { pageSize: 2 });
  try {
    await waitFor(() => r.reflector.synced && api.watches().length === 1, 2_000, 'synced and watching');
  } finally {
    await r.stop();
    await api.close();
  }
  assert.equal(r.store.size, FULL.length);
  assert.deepEqual(
    r.store
      .list()
      .map((c) => c.metadata.name)
      .sort(),
    FULL,
    'the store holds the full list only: b, deleted since the first page, is not kept',
  );
  assert.equal(r.reflector.resourceVersion, '7');
  assert.equal((api.watches()[0] as Seen).query.get('resourceVersion'), '7', 'the watch starts from the full list');
});

test('a silent watch is restarted after inactivityTimeoutMs as Inactive (metric: inactivity), without a relist', async () => {
  const api = await fakeApiserver({
    list: (res) => sendJson(res, 200, listBody('42', ['a'])),
    watch: silentWatch,
  });
  const metrics = new RecordingMetrics();
  const { log, entries } = recordingLogger();
  const r = runReflector(api, {
    metrics,
    log,
    inactivityTimeoutMs: 200,
    backoff: { initialMs: 50, maxMs: 100, jitter: 0 },
  });
  try {
    await waitFor(() => api.watches().length >= 2, 3_000, 'a second watch');
  } finally {
    await r.stop();
    await api.close();
  }
  const [first, second] = api.watches();
  assert.ok(first !== undefined && second !== undefined);
  assert.ok(second.at - first.at >= 200, `the watch was given its whole silence budget (${second.at - first.at} ms)`);
  assert.equal(second.query.get('resourceVersion'), '42', 'resumed from the last resourceVersion');
  assert.equal(api.lists().length, 1, 'a silent watch is not a reason to relist');
  assert.equal(metrics.restarts[0], 'inactivity');
  assert.equal(metrics.failures[0], 'Inactive');
  assert.ok(
    entries.some((e) => e.level === 'warn' && e.fields.code === 'Inactive'),
    'the restart is logged with the Inactive code',
  );
});

/** Watch events as the apiserver streams them, one JSON object per line. */
const lines = (...events: unknown[]) => events.map((e) => `${JSON.stringify(e)}\n`).join('');
const initialEventsEnd = (rv: string) => ({
  type: 'BOOKMARK',
  object: { metadata: { resourceVersion: rv, annotations: { 'k8s.io/initial-events-end': 'true' } } },
});

test('a streaming list stores the initial events at the end-of-initial-events bookmark, with no LIST, and the same watch goes on', async () => {
  let release: () => void = () => {};
  const api = await fakeApiserver({
    list: (res) => sendJson(res, 500, status(500, 'InternalError', 'no list expected')),
    watch: (res, seen, nth) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (nth > 1) return; // later watches stay open and silent
      assert.equal(seen.query.get('sendInitialEvents'), 'true');
      assert.equal(seen.query.get('resourceVersionMatch'), 'NotOlderThan');
      assert.equal(seen.query.get('resourceVersion'), '');
      res.write(lines({ type: 'ADDED', object: configMap('a', '5') }, { type: 'ADDED', object: configMap('b', '7') }));
      // the initial state is not stored piecemeal: the bookmark comes after a pause
      release = () => {
        res.write(lines(initialEventsEnd('9')));
        res.write(lines({ type: 'MODIFIED', object: { ...configMap('a', '10'), data: { n: '2' } } }));
      };
    },
  });
  const metrics = new RecordingMetrics();
  const r = runReflector(api, { listMode: 'stream', metrics });
  try {
    await delay(200);
    assert.equal(r.reflector.synced, false, 'not synced before the bookmark');
    assert.equal(r.store.size, 0, 'nothing stored before the bookmark');
    release();
    await waitFor(() => r.store.get('default/a')?.metadata.resourceVersion === '10', 2_000, 'the change after sync');
    assert.equal(r.reflector.synced, true);
    assert.deepEqual([...r.store.keys()].sort(), ['default/a', 'default/b']);
    assert.equal(r.reflector.listMode, 'stream');
    assert.equal(api.lists().length, 0, 'no LIST request');
    assert.equal(api.watches().length, 1, 'one watch did both');
    assert.equal(metrics.relists, 1);
  } finally {
    await r.stop();
    await api.close();
  }
});

test('a server that refuses streaming lists (400) gets a paginated list and plain watches; the next relist asks again', async () => {
  const api = await fakeApiserver({
    list: (res) => sendJson(res, 200, listBody('20', ['a', 'b', 'c'])),
    watch: (res, seen) => {
      if (seen.query.get('sendInitialEvents') === 'true') {
        sendJson(
          res,
          400,
          status(
            400,
            'BadRequest',
            'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled',
          ),
        );
        return;
      }
      silentWatch(res);
    },
  });
  const r = runReflector(api, { listMode: 'stream' });
  try {
    await waitFor(() => r.reflector.synced && api.watches().length >= 2, 2_000, 'synced by a list');
    assert.equal(r.store.size, 3);
    assert.equal(api.lists().length, 1);
    assert.equal(api.watches()[1]?.query.get('resourceVersion'), '20');
    assert.equal(api.watches()[1]?.query.get('sendInitialEvents'), null);
    assert.equal(r.reflector.listMode, 'stream', 'the fallback was for this cycle: the next list streams (client-go)');
  } finally {
    await r.stop();
    await api.close();
  }
});

test('a streaming list that ends before its bookmark falls back to pages for that cycle only: the relist after a 410 streams again', async () => {
  let streams = 0;
  const api = await fakeApiserver({
    list: (res) => sendJson(res, 200, listBody('30', ['a', 'b'])),
    watch: (res, seen) => {
      if (seen.query.get('sendInitialEvents') === 'true') {
        streams += 1;
        res.writeHead(200, { 'content-type': 'application/json' });
        if (streams === 1) {
          // cut short before the bookmark (an apiserver stopping, or one that ignores sendInitialEvents)
          res.end(
            lines({ type: 'ADDED', object: configMap('a', '1') }, { type: 'ADDED', object: configMap('b', '2') }),
          );
          return;
        }
        res.write(lines({ type: 'ADDED', object: configMap('a', '41') }, initialEventsEnd('42')));
        return; // then open and silent
      }
      expiredWatch(res, seen); // the watch after the paginated list: its resourceVersion was compacted away
    },
  });
  const r = runReflector(api, { listMode: 'stream' });
  try {
    await waitFor(
      () => streams === 2 && r.store.get('default/a')?.metadata.resourceVersion === '41',
      3_000,
      'a stream',
    );
    assert.equal(api.lists().length, 1, 'one paginated list, for the cycle whose stream was cut short');
    assert.deepEqual(
      api.requests.map((q) => (q.verb === 'LIST' ? 'LIST' : q.query.get('sendInitialEvents') ? 'STREAM' : 'WATCH')),
      ['STREAM', 'LIST', 'WATCH', 'STREAM'],
    );
    assert.deepEqual([...r.store.keys()], ['default/a'], 'the streamed state replaced the listed one');
    assert.equal(r.reflector.listMode, 'stream');
  } finally {
    await r.stop();
    await api.close();
  }
});

test('a streaming list whose connection breaks, or that is throttled (429), is streamed again after a backoff, not listed', async () => {
  let streams = 0;
  const api = await fakeApiserver({
    list: (res) => sendJson(res, 500, status(500, 'InternalError', 'no list expected')),
    watch: (res) => {
      streams += 1;
      if (streams === 1) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(lines({ type: 'ADDED', object: configMap('a', '1') }));
        setTimeout(() => res.socket?.destroy(), 20); // the connection breaks mid-stream
        return;
      }
      if (streams === 2) {
        sendJson(res, 429, status(429, 'TooManyRequests', 'the storage is (re)initializing'));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(lines({ type: 'ADDED', object: configMap('a', '5') }, initialEventsEnd('6')));
    },
  });
  const metrics = new RecordingMetrics();
  const r = runReflector(api, { listMode: 'stream', backoff: { initialMs: 20, maxMs: 40, jitter: 0 }, metrics });
  try {
    await waitFor(() => r.reflector.synced, 3_000, 'synced by the third stream');
    assert.equal(api.lists().length, 0, 'no paginated list');
    assert.equal(streams, 3);
    assert.deepEqual(metrics.failures, ['Network', 'TooManyRequests']);
    assert.equal(r.store.get('default/a')?.metadata.resourceVersion, '5');
  } finally {
    await r.stop();
    await api.close();
  }
});
