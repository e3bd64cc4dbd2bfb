import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { nodeCheckScript } from './templates.ts';

/** Runs a package.json script line with `node` being the given binary. */
function runScript(line: string, node: string): { status: number | null; stderr: string } {
  const r = spawnSync('sh', ['-c', line.replace(/^node /, `${node} `)], { encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
}

test('the scaffolded prestart check needs no dependency: silent on a new enough Node, one line on an old one', () => {
  const script = nodeCheckScript('demo', '>=22.18');
  assert.deepEqual(runScript(script, process.execPath), { status: 0, stderr: '' });
  const tooNew = nodeCheckScript('demo', '>=99.0');
  const r = runScript(tooNew, process.execPath);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `demo needs Node >= 99.0 (this is ${process.version}): install Node 99 LTS or newer\n`);
  // the machine's own old Node, where there is one (Debian's Node 20 here)
  if (existsSync('/usr/bin/node')) {
    const old = spawnSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).stdout.trim();
    if (Number(old.slice(1).split('.')[0]) < 22) {
      const o = runScript(script, '/usr/bin/node');
      assert.equal(o.status, 1);
      assert.match(o.stderr, /^demo needs Node >= 22\.18 \(this is v\d+/);
    }
  }
});
