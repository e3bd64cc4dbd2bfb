import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LogFields, Logger } from '../logger.ts';
import { loggedOnce, warningsOf } from './warnings.ts';

/** A header value as Node hands it over: the UTF-8 bytes the apiserver sent, read as Latin-1. */
const wire = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

test('warningsOf: every 299 warning of every header, unescaped, in order; others and garbage skipped', () => {
  assert.deepEqual(warningsOf(undefined), []);
  assert.deepEqual(warningsOf(['299 - "unknown field \\"spec.replcas\\""']), ['unknown field "spec.replcas"']);
  assert.deepEqual(
    warningsOf([
      '299 - "a, with a comma", 299 - "second"',
      '299 kube-apiserver "third" "Mon, 01 Jan 2026 00:00:00 GMT"',
    ]),
    ['a, with a comma', 'second', 'third'],
  );
  assert.deepEqual(warningsOf(['199 - "not ours", 299 - "ours"']), ['ours']);
  assert.deepEqual(warningsOf([wire('299 - "unknown field \\"spec.färbe\\" 🎨"')]), ['unknown field "spec.färbe" 🎨']);
  assert.deepEqual(warningsOf(['299 - "back\\\\slash"']), ['back\\slash']);
  assert.deepEqual(warningsOf(['299 - "never ends', '299 - "next header"']), ['next header']);
  assert.deepEqual(warningsOf(['garbage', '']), []);
});

test('loggedOnce: each distinct text once, at warn, with the request that drew it; a bounded memory', () => {
  const entries: { level: string; message: string; fields: LogFields }[] = [];
  const at = (level: string) => (fields: LogFields, message: string) => entries.push({ level, message, fields });
  const log: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log };
  const handler = loggedOnce(log, 2);
  handler('a', 'POST /x');
  handler('a', 'PUT /y');
  handler('b', 'PUT /y');
  assert.deepEqual(
    entries.map((e) => [e.level, e.message, e.fields.request]),
    [
      ['warn', 'the apiserver warns: a', 'POST /x'],
      ['warn', 'the apiserver warns: b', 'PUT /y'],
    ],
  );
  handler('c', 'GET /z'); // over the cap of 2: 'a' is forgotten
  handler('a', 'GET /z');
  assert.equal(entries.length, 4);
});
