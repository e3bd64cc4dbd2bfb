import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kindsName, plural } from './names.ts';

test("plural and the kind's constant name: the plural with the kind's capitals", () => {
  const cases: [string, string, string][] = [
    ['AppService', 'appservices', 'AppServices'],
    ['Batch', 'batches', 'Batches'],
    ['Policy', 'policies', 'Policies'],
    ['Status', 'statuses', 'Statuses'],
    ['Box', 'boxes', 'Boxes'],
    ['Gateway', 'gateways', 'Gateways'],
    ['CronJob', 'cronjobs', 'CronJobs'],
  ];
  for (const [kind, p, name] of cases) {
    assert.equal(plural(kind), p, kind);
    assert.equal(kindsName(kind), name, kind);
  }
});
