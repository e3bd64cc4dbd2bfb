import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isApiError } from '../errors.ts';
import { goDuration, inner, keeps, Reader, setKey } from './reader.ts';
import { message } from './wire.fixture.ts';

function reader(bytes: readonly number[] | Uint8Array): Reader {
  return new Reader(bytes instanceof Uint8Array ? bytes : Uint8Array.from(bytes));
}

test('varints: one byte, many bytes, int32 written sign-extended as ten bytes', () => {
  assert.equal(reader([0x05]).uint32(), 5);
  assert.equal(reader([0xac, 0x02]).uint32(), 300);
  assert.equal(reader([0xff, 0xff, 0xff, 0xff, 0x0f]).uint32(), 4294967295);
  // -1 as Go writes an int32: ten bytes
  assert.equal(reader([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).int32(), -1);
  assert.equal(reader([0x80, 0x80, 0x80, 0x80, 0xf8, 0xff, 0xff, 0xff, 0xff, 0x01]).int32(), -2147483648);
});

test('int64: exact to 2^53, negative values, and beyond 2^53 rounded as JSON.parse rounds', () => {
  const at = (n: bigint) => reader(message([[1, n]]).subarray(1)).int64();
  assert.equal(at(0n), 0);
  assert.equal(at(2n ** 31n), 2 ** 31);
  assert.equal(at(2n ** 53n - 1n), Number.MAX_SAFE_INTEGER);
  assert.equal(at(-5n), -5);
  assert.equal(at(-(2n ** 40n)), -(2 ** 40));
  assert.equal(at(9007199254740993n), JSON.parse('9007199254740993'));
  assert.equal(at(2n ** 63n - 1n), JSON.parse('9223372036854775807'));
});

test('a truncated or over-long varint, and a length past the end, are Malformed', () => {
  const malformed = (fn: () => unknown) => assert.throws(fn, (e: unknown) => isApiError(e) && e.code === 'Malformed');
  malformed(() => reader([0x80]).uint32());
  malformed(() => reader([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).uint32());
  malformed(() => reader([0x80, 0x80]).int64());
  malformed(() => reader([0x05, 0x61]).end());
  malformed(() => reader([0x0a, 0x05, 0x61]).skip(reader([0x0a]).tag()));
  malformed(() => reader([0x01, 0x02]).double());
});

test('strings: ASCII, non-ASCII, and invalid UTF-8 as U+FFFD, as Go’s JSON encoder writes them', () => {
  for (const s of ['', 'pod-1', 'héllo — 日本語 — 😀', 'x'.repeat(100), `ü${'a'.repeat(40)}`]) {
    const bytes = Buffer.from(s, 'utf8');
    assert.equal(reader(Uint8Array.from([bytes.length, ...bytes])).string(), s);
  }
  assert.equal(reader([2, 0xc3, 0x28]).string(), '\uFFFD(');
  // the same through a Node Buffer (the client's bodies), which takes Node's own UTF-8 path
  for (const s of ['pod-1', 'héllo — 日本語 — 😀', 'x'.repeat(100)]) {
    const bytes = Buffer.from(s, 'utf8');
    assert.equal(new Reader(Buffer.from([bytes.length, ...bytes])).string(), s);
  }
  assert.equal(new Reader(Buffer.from([3, 0xc3, 0x28, 0xff])).string(), '\uFFFD(\uFFFD');
  // one U+FFFD per byte that begins no valid sequence, as Go's utf8.DecodeRune steps (WHATWG writes one per subpart)
  const go: [number[], string][] = [
    [[0x61, 0xe2, 0x82, 0x62], 'a\uFFFD\uFFFDb'],
    [[0xf0, 0x9f, 0x98], '\uFFFD\uFFFD\uFFFD'],
    [[0xed, 0xa0, 0x80, 0x7a], '\uFFFD\uFFFD\uFFFDz'],
    [[0xe0, 0x80, 0x41], '\uFFFD\uFFFDA'],
    [[0xf4, 0x90, 0x80, 0x80], '\uFFFD\uFFFD\uFFFD\uFFFD'],
    [[0xc3, 0xa9, 0xef, 0xbf, 0xbd, 0x80], 'é\uFFFD\uFFFD'],
    [[0xf0, 0x9f, 0x98, 0x80, 0xc0], '😀\uFFFD'],
  ];
  for (const [bytes, want] of go) {
    assert.equal(new Reader(Buffer.from([bytes.length, ...bytes])).string(), want, bytes.join(' '));
    assert.equal(reader([bytes.length, ...bytes]).string(), want, `${bytes.join(' ')} (not a Buffer)`);
  }
});

test('goDuration is Go’s time.Duration.String()', () => {
  const cases: [bigint, string][] = [
    [0n, '0s'],
    [1n, '1ns'],
    [1500n, '1.5µs'],
    [1_500_000n, '1.5ms'],
    [1_000_000_000n, '1s'],
    [1_500_000_000n, '1.5s'],
    [60_000_000_000n, '1m0s'],
    [3_723_500_000_000n, '1h2m3.5s'],
    [-90_000_000_000n, '-1m30s'],
    [9_223_372_036_854_775_807n, '2562047h47m16.854775807s'],
    [-9_223_372_036_854_775_808n, '-2562047h47m16.854775808s'],
  ];
  for (const [ns, text] of cases) assert.equal(goDuration(ns), text, String(ns));
});

test('masks: a named field kept, skipped or masked further; the rest as `rest` says', () => {
  const m = {
    rest: false,
    fields: new Map<string, boolean | { rest: boolean; fields: Map<string, boolean> }>([
      ['metadata', true],
      ['spec', false],
      ['status', { rest: false, fields: new Map([['phase', true]]) }],
    ]),
  };
  assert.equal(keeps(m, 'metadata'), true);
  assert.equal(keeps(m, 'spec'), false);
  assert.equal(keeps(m, 'status'), true);
  assert.equal(keeps(m, 'other'), false);
  assert.equal(inner(m, 'metadata'), undefined);
  assert.equal(inner(m, 'status')?.fields.get('phase'), true);
  assert.equal(inner(undefined, 'status'), undefined);
});

test('setKey makes __proto__ an own property, as JSON.parse does', () => {
  const o: Record<string, unknown> = {};
  setKey(o, '__proto__', 'x');
  setKey(o, 'a', 1);
  assert.deepEqual(Object.keys(o), ['__proto__', 'a']);
  assert.equal(Object.getPrototypeOf(o), Object.prototype);
  assert.deepStrictEqual(o, JSON.parse('{"__proto__":"x","a":1}'));
});
