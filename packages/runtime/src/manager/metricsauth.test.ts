import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Client } from '../client/client.ts';
import type { KubeObject, ResourceType } from '../client/resource.ts';
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
    async create(
      r: ResourceType,
      obj: KubeObject & { spec: Record<string, unknown> },
      options: { signal?: AbortSignal } = {},
    ) {
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

test('a review that hangs is aborted after reviewTimeoutMs, and when the scraper disconnects', async () => {
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
  assert.equal(((await decision) as { status: number }).status, 500);
  assert.equal(aborted.count, 2, 'aborted with the scraper');
});

test('concurrent scrapes with one token share one review', async () => {
  const { client, calls } = fakeClient({ good: 'prom' }, new Set(['prom get /metrics']));
  const auth = new ScrapeAuthorizer({ client });
  await Promise.all([1, 2, 3, 4].map(() => auth.authorize(scrape('good'))));
  assert.deepEqual(calls, { tokenreviews: 1, subjectaccessreviews: 1 });
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
