import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { listensOn } from './listeners.ts';

test('listensOn: true for the process that listens on the port, false for another and for a free port', async (t) => {
  if ((await listensOn(process.pid, 1)) === undefined) return t.skip('no /proc here');
  const child = spawn(
    process.execPath,
    ['-e', "const s=require('net').createServer().listen(0,'127.0.0.1',()=>console.log(s.address().port))"],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const [chunk] = (await once(child.stdout, 'data')) as [Buffer];
    const port = Number(chunk.toString().trim());
    assert.equal(await listensOn(child.pid as number, port), true, 'the child holds it');
    assert.equal(await listensOn(process.pid, port), false, 'another process answering there is not the child');
    const mine = createServer().listen(0, '127.0.0.1');
    await once(mine, 'listening');
    const own = (mine.address() as { port: number }).port;
    assert.equal(await listensOn(process.pid, own), true);
    assert.equal(await listensOn(child.pid as number, own), false);
    mine.close();
    await once(mine, 'close');
    assert.equal(await listensOn(process.pid, own), false, 'closed: nobody listens');
  } finally {
    child.kill();
  }
});
