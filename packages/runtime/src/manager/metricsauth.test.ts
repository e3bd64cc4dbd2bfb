import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { Client } from '../client/client.ts';
import { ApiError } from '../client/errors.ts';
import type { Kind, KubeObject } from '../client/resource.ts';
import type { TimerSource } from '../internal/sleep.ts';
import { bearerToken, ScrapeAuthorizer, TtlCache } from './metricsauth.ts';

/** A client that answers reviews from tables and counts them. */
function fakeClient(
  users: Record<string, string>,
  allowed: Set<string>,
  fail: { on: boolean; hang?: boolean; on403?: boolean } = { on: false },
) {
  const calls = { tokenreviews: 0, subjectaccessreviews: 0 };
  const aborted = { count: 0 };
  const client = {
    async create(r: Kind, obj: KubeObject & { spec: Record<string, unknown> }, options: { signal?: AbortSignal } = {}) {
      if (fail.hang) {
        return new Promise((_, reject) =>
          options.signal?.addEventListener('abort', () => {
            aborted.count += 1;
            reject(options.signal?.reason);
          }),
        );
      }
      if (fail.on) throw new Error('connect ECONNREFUSED 127.0.0.1:6443');
      if (r.plural === 'tokenreviews') {
        calls.tokenreviews += 1;
        const user = users[obj.spec.token as string];
        return {
          ...obj,
          status: user
            ? { authenticated: true, user: { username: user, groups: ['g'] } }
            : { error: '[invalid bearer token, service account token has been invalidated]' },
        };
      }
      if (fail.on403) {
        throw new Error('subjectaccessreviews is forbidden: User "system:serviceaccount:op-system:op" cannot create');
      }
      calls.subjectaccessreviews += 1;
      const attrs = obj.spec.nonResourceAttributes as { path: string; verb: string };
      const key = `${obj.spec.user as string} ${attrs.verb} ${attrs.path}`;
      return { ...obj, status: { allowed: allowed.has(key), reason: allowed.has(key) ? '' : 'no RBAC rule' } };
    },
  };
  return { client: client as unknown as Client, calls, aborted };
}

const scrape = (token?: string) => ({
  authorization: token === undefined ? undefined : `Bearer ${token}`,
  path: '/metrics',
  method: 'GET',
});

test('401 without a token (no review made), 401 for an unknown token, 403 without the right, allowed with it', async () => {
  const { client, calls } = fakeClient({ good: 'prom', weak: 'bob' }, new Set(['prom get /metrics']));
  const auth = new ScrapeAuthorizer({ client });
  const unauthorized = { allowed: false, status: 401, message: 'Unauthorized' };
  assert.deepEqual(await auth.authorize(scrape()), unauthorized);
  assert.equal(calls.tokenreviews, 0);
  assert.deepEqual(await auth.authorize(scrape('nope')), unauthorized, 'the TokenReview’s error is not repeated');
  assert.deepEqual(await auth.authorize(scrape('weak')), {
    allowed: false,
    status: 403,
    message: 'Forbidden: user "bob" cannot get path "/metrics"',
  });
  assert.deepEqual(await auth.authorize(scrape('good')), { allowed: true, user: 'prom' });
});

test('answers are cached for their TTL: allowed 5 min, token 1 min, denied 30 s', async () => {
  let now = 0;
  const { client, calls } = fakeClient({ good: 'prom', weak: 'bob' }, new Set(['prom get /metrics']));
  const auth = new ScrapeAuthorizer({ client, now: () => now });
  await auth.authorize(scrape('good'));
  await auth.authorize(scrape('good'));
  assert.deepEqual(calls, { tokenreviews: 1, subjectaccessreviews: 1 });
  now = 59_000;
  await auth.authorize(scrape('good'));
  assert.deepEqual(calls, { tokenreviews: 1, subjectaccessreviews: 1 });
  now = 61_000;
  await auth.authorize(scrape('good'));
  assert.deepEqual(calls, { tokenreviews: 2, subjectaccessreviews: 1 }, 'the token is reviewed again after 1 min');
  await auth.authorize(scrape('weak'));
  await auth.authorize(scrape('weak'));
  assert.deepEqual(calls, { tokenreviews: 3, subjectaccessreviews: 2 });
  now += 31_000;
  await auth.authorize(scrape('weak'));
  assert.deepEqual(calls, { tokenreviews: 3, subjectaccessreviews: 3 }, 'a denial is asked again after 30 s');
});

test('a failing review answers 500 and is not cached', async () => {
  const fail = { on: true };
  const { client, calls } = fakeClient({ good: 'prom' }, new Set(['prom get /metrics']), fail);
  const auth = new ScrapeAuthorizer({ client });
  assert.deepEqual(
    await auth.authorize(scrape('good')),
    { allowed: false, status: 500, message: 'Internal Server Error' },
    'the apiserver’s error stays in the log',
  );
  fail.on = false;
  assert.deepEqual(await auth.authorize(scrape('good')), { allowed: true, user: 'prom' });
  assert.equal(calls.tokenreviews, 1);
});

test('a failing SubjectAccessReview answers a fixed 500 naming only the scraping user', async () => {
  const { client } = fakeClient({ good: 'prom' }, new Set(), { on: false, on403: true });
  const auth = new ScrapeAuthorizer({ client });
  assert.deepEqual(await auth.authorize(scrape('good')), {
    allowed: false,
    status: 500,
    message: 'Authorization for user prom failed',
  });
});

test('a review that hangs is aborted after reviewTimeoutMs; a scraper that disconnects stops waiting at once', async () => {
  const fail = { on: false, hang: true };
  const { client, aborted } = fakeClient({ good: 'prom' }, new Set(['prom get /metrics']), fail);
  const auth = new ScrapeAuthorizer({ client, reviewTimeoutMs: 50 });
  const t0 = performance.now();
  assert.equal(((await auth.authorize(scrape('good'))) as { status: number }).status, 500);
  assert.ok(performance.now() - t0 < 1_000);
  assert.equal(aborted.count, 1, 'timed out');
  const slow = new ScrapeAuthorizer({ client, reviewTimeoutMs: 60_000 });
  const gone = new AbortController();
  const decision = slow.authorize(scrape('good'), gone.signal);
  gone.abort();
  assert.equal(((await decision) as { status: number }).status, 500, 'the scraper is answered at once');
  assert.equal(aborted.count, 1, 'the review goes on for whoever else waits for it');
});

test('concurrent scrapes with one token share one review', async () => {
  const { client, calls } = fakeClient({ good: 'prom' }, new Set(['prom get /metrics']));
  const auth = new ScrapeAuthorizer({ client });
  await Promise.all([1, 2, 3, 4].map(() => auth.authorize(scrape('good'))));
  assert.deepEqual(calls, { tokenreviews: 1, subjectaccessreviews: 1 });
});

/** TokenReviews answered by `answer` (one call per review), each seeing its own signal. */
function scriptedClient(answer: (n: number, signal: AbortSignal | undefined) => Promise<Record<string, unknown>>) {
  const calls = { tokenreviews: 0, subjectaccessreviews: 0 };
  const client = {
    async create(r: Kind, obj: KubeObject, options: { signal?: AbortSignal } = {}) {
      if (r.plural === 'subjectaccessreviews') {
        calls.subjectaccessreviews += 1;
        return { ...obj, status: { allowed: true } };
      }
      calls.tokenreviews += 1;
      return { ...obj, status: await answer(calls.tokenreviews, options.signal) };
    },
  };
  return { client: client as unknown as Client, calls };
}

const PROM = { authenticated: true, user: { username: 'prom' } };

/** Timers that fire at once, recording each delay asked for. */
function instantTimers(): TimerSource & { delays: number[] } {
  const delays: number[] = [];
  return {
    delays,
    setTimer(ms, fn) {
      delays.push(ms);
      queueMicrotask(fn);
      return { cancel: () => {} };
    },
  };
}

test('a shared review is not the first scraper’s: it disconnects, the second still gets its answer', async () => {
  let answer: (status: Record<string, unknown>) => void = () => {};
  let reviewAborted = false;
  const { client, calls } = scriptedClient(
    (_n, signal) =>
      new Promise((resolve, reject) => {
        answer = resolve;
        signal?.addEventListener('abort', () => {
          reviewAborted = true;
          reject(signal.reason);
        });
      }),
  );
  const auth = new ScrapeAuthorizer({ client });
  const first = new AbortController();
  const second = new AbortController();
  const a = auth.authorize(scrape('good'), first.signal);
  const b = auth.authorize(scrape('good'), second.signal);
  await new Promise((r) => setImmediate(r));
  first.abort(); // the first scraper disconnects while the review is under way
  assert.equal(((await a) as { status: number }).status, 500, 'the first scraper stops waiting at once');
  answer(PROM);
  assert.deepEqual(await b, { allowed: true, user: 'prom' }, 'the second gets the shared answer');
  assert.equal(reviewAborted, false, 'the review ran under its own signal, not the first scraper’s');
  assert.equal(calls.tokenreviews, 1, 'one review for both');
  assert.deepEqual(await auth.authorize(scrape('good')), { allowed: true, user: 'prom' });
  assert.equal(calls.tokenreviews, 1, 'and its answer is cached');
});

test('a review that fails twice is retried with backoff (500 ms × 1.5ⁿ, 20 % jitter) and then succeeds', async () => {
  const { client, calls } = scriptedClient(async (n) => {
    if (n <= 2) throw new ApiError('InternalError', 'POST tokenreviews: etcdserver: leader changed', { status: 500 });
    return PROM;
  });
  const timers = instantTimers();
  const auth = new ScrapeAuthorizer({ client, timers });
  assert.deepEqual(await auth.authorize(scrape('good')), { allowed: true, user: 'prom' });
  assert.equal(calls.tokenreviews, 3);
  assert.equal(timers.delays.length, 2);
  const [d1 = 0, d2 = 0] = timers.delays;
  assert.ok(d1 >= 500 && d1 <= 600, `first wait ${d1} ms`);
  assert.ok(d2 >= 750 && d2 <= 900, `second wait ${d2} ms`);
});

test('a review is tried at most 5 times; a refusal that no retry can change is not retried', async () => {
  const down = scriptedClient(async () => {
    throw new ApiError('Timeout', 'POST tokenreviews: the server was unable to return a response in time', {
      status: 504,
    });
  });
  const timers = instantTimers();
  const auth = new ScrapeAuthorizer({ client: down.client, timers });
  assert.equal(((await auth.authorize(scrape('good'))) as { status: number }).status, 500);
  assert.equal(down.calls.tokenreviews, 5, '5 tries');
  assert.equal(timers.delays.length, 4);
  const forbidden = scriptedClient(async () => {
    throw new ApiError('Forbidden', 'tokenreviews is forbidden', { status: 403 });
  });
  const auth2 = new ScrapeAuthorizer({ client: forbidden.client, timers: instantTimers() });
  assert.equal(((await auth2.authorize(scrape('good'))) as { status: number }).status, 500);
  assert.equal(forbidden.calls.tokenreviews, 1, 'Forbidden: not retried');
});

/**
 * A loopback server standing in for the apiserver's review endpoints (a client's transport on the wire): answers each
 * TokenReview as `answer` scripts it and counts them.
 */
async function reviewServer(answer: (res: ServerResponse) => void) {
  const requests = { tokenreviews: 0 };
  const server = createServer((req, res) => {
    req.resume();
    if (req.url?.endsWith('/tokenreviews')) requests.tokenreviews += 1;
    answer(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = new Client({
    server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    auth: { credentials: async () => ({ headers: {} }), invalidate() {} },
    namespace: 'default',
    contextName: 'test',
  });
  const close = () => {
    client.transport.close();
    server.closeAllConnections();
    server.close();
  };
  return { client, requests, close };
}

const status = (res: ServerResponse, code: number, reason: string, headers: Record<string, string> = {}) => {
  res.writeHead(code, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message: reason }));
};

test('one layer retries each failure: throttled answers by the transport (4 requests), the rest by the authorizer (5)', async () => {
  const cases: [string, (res: ServerResponse) => void, number][] = [
    // the client's transport retries an answer that says when to come back, 3 times; the authorizer not again
    ['429 with Retry-After', (res) => status(res, 429, 'TooManyRequests', { 'retry-after': '0' }), 4],
    ['503 with Retry-After', (res) => status(res, 503, 'ServiceUnavailable', { 'retry-after': '0' }), 4],
    // the transport never replays a POST otherwise: the authorizer's 5 tries
    ['500 InternalError', (res) => status(res, 500, 'InternalError'), 5],
    ['a reset connection', (res) => res.socket?.resetAndDestroy(), 5],
  ];
  for (const [what, answer, expected] of cases) {
    const { client, requests, close } = await reviewServer(answer);
    try {
      const auth = new ScrapeAuthorizer({ client, timers: instantTimers() });
      assert.deepEqual(await auth.authorize(scrape('good')), {
        allowed: false,
        status: 500,
        message: 'Internal Server Error',
      });
      assert.equal(requests.tokenreviews, expected, `${what}: TokenReview requests for one review`);
    } finally {
      close();
    }
  }
});

test('TtlCache keeps at most max entries, dropping the oldest', async () => {
  const cache = new TtlCache<number>(2, () => 0);
  for (const k of ['a', 'b', 'c']) await cache.getOrLoad(k, async () => ({ value: 1, ttlMs: 1000 }));
  assert.equal(cache.size, 2);
  let loaded = false;
  await cache.getOrLoad('a', async () => {
    loaded = true;
    return { value: 2, ttlMs: 1000 };
  });
  assert.ok(loaded, '"a" was dropped');
});

test('bearerToken reads the Bearer scheme only', () => {
  assert.equal(bearerToken('Bearer abc.def'), 'abc.def');
  assert.equal(bearerToken('bearer   abc'), 'abc');
  assert.equal(bearerToken('Basic dXNlcjpwYXNz'), undefined);
  assert.equal(bearerToken('Bearer'), undefined);
  assert.equal(bearerToken(undefined), undefined);
});

test("TtlCache: a caller whose signal aborts first is rejected with its signal's reason; the load goes on", async () => {
  const cache = new TtlCache<number>(2, () => 0);
  let finish: (v: { value: number; ttlMs: number }) => void = () => {};
  const load = () => new Promise<{ value: number; ttlMs: number }>((resolve) => (finish = resolve));
  const gone = new AbortController();
  const first = cache.getOrLoad('k', load, gone.signal);
  const other = cache.getOrLoad('k', load);
  const reason = new DOMException('the scraper went away', 'AbortError');
  gone.abort(reason);
  await assert.rejects(first, (err: unknown) => err === reason);
  await assert.rejects(cache.getOrLoad('k', load, gone.signal), (err: unknown) => err === reason);
  finish({ value: 7, ttlMs: 1_000 });
  assert.equal(await other, 7);
});
