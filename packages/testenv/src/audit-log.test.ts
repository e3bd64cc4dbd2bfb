import assert from 'node:assert/strict';
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { auditLogSize, readAuditLog, WRITE_VERBS } from './audit-log.ts';

const event = (username: string, verb: string, name: string) =>
  `${JSON.stringify({ verb, user: { username }, objectRef: { resource: 'pods', name } })}\n`;

test('readAuditLog reads whole lines only, filters by user, and continues where it stopped', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-audit-'));
  try {
    const path = join(dir, 'audit.log');
    const op = 'system:serviceaccount:op:op';
    await writeFile(path, event(op, 'create', 'a') + event('admin', 'get', 'b') + event(op, 'get', 'c'));
    const size = await auditLogSize(path);
    const half = event(op, 'delete', 'd');
    await appendFile(path, half.slice(0, 20));
    assert.equal(await auditLogSize(path), size, 'the size is taken at a line boundary');
    const first = await readAuditLog(path, { username: op });
    assert.deepEqual(
      first.events.map((e) => e.objectRef?.name),
      ['a', 'c'],
    );
    assert.equal(first.end, size, 'a line still being written is left for the next read');
    await appendFile(path, half.slice(20));
    const next = await readAuditLog(path, { from: first.end, username: op });
    assert.deepEqual(
      next.events.map((e) => [e.verb, e.objectRef?.name]),
      [['delete', 'd']],
    );
    assert.equal(next.end, await auditLogSize(path));
    const all = await readAuditLog(path, { to: size });
    assert.equal(all.events.length, 3);
    assert.ok(WRITE_VERBS.has('patch') && !WRITE_VERBS.has('watch'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
