import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { createLogger } from './logger.ts';

test('createLogger: every entry has the name, and no pid or hostname', () => {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const log = createLogger({ name: 'appservice-operator', destination });
  log.info({ shard: 3 }, 'sharding: shard acquired');
  log.child({ component: 'sharding' }).warn({}, 'again');
  const entries = lines
    .join('')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(entries.length, 2);
  for (const e of entries) {
    assert.equal(e.name, 'appservice-operator');
    assert.equal('pid' in e || 'hostname' in e, false);
  }
  assert.equal(entries[1]?.component, 'sharding');
});
