import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReleaseError } from './release/plan.ts';
import { release } from './release.ts';

test('a publish needs --registry (only a --dry-run may leave it out), refused before any work', async () => {
  const out: string[] = [];
  await assert.rejects(
    release(['--version', '0.2.0'], (line) => out.push(line)),
    (e: unknown) =>
      e instanceof ReleaseError &&
      e.code === 'Usage' &&
      e.message === '--registry URL is required: name the registry to publish to (only a --dry-run may leave it out)',
  );
  await assert.rejects(
    release(['--dry-run', '--registry', 'not a url'], (line) => out.push(line)),
    (e: unknown) => e instanceof ReleaseError && e.code === 'Usage' && /is not a URL/.test(e.message),
  );
  assert.deepEqual(out, []);
});
