/**
 * Properties of `Quantity` over generated texts of every shape the grammar allows (signs, leading zeros, fractions,
 * every suffix, exponents): the text round-trips through its canonical form, the canonical form is a fixed point and
 * has its documented shape, comparison is a total order consistent with subtraction, and addition and subtraction
 * are exact inverses.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Quantity } from './quantity.ts';
import { QUANTITY_PATTERN } from './schema.ts';

const SUFFIXES = ['', 'n', 'u', 'm', 'k', 'M', 'G', 'T', 'P', 'E', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

const digits = (max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 0, maxLength: max });

/** A quantity text: sign, integer digits, an optional fraction, and a suffix or an exponent. */
const text = fc
  .record({
    sign: fc.constantFrom('', '+', '-'),
    integer: digits(21),
    fraction: fc.option(digits(12), { nil: undefined }),
    suffix: fc.oneof(
      fc.constantFrom(...SUFFIXES),
      fc
        .tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.integer({ min: 0, max: 40 }))
        .map(([e, sign, n]) => `${e}${sign}${n}`),
    ),
  })
  .filter((t) => /[0-9]/.test(t.integer + (t.fraction ?? '')))
  .map((t) => `${t.sign}${t.integer}${t.fraction === undefined ? '' : `.${t.fraction}`}${t.suffix}`);

const quantity = text.map((t) => Quantity.parse(t));

/** The shape of a computed canonical text: an integer without leading zeros and one suffix or exponent. */
const CANONICAL = /^(0|-?[1-9][0-9]*((Ki|Mi|Gi|Ti|Pi|Ei)|[numkMGTPE]|e-?[1-9][0-9]*)?)$/;

test('every generated text matches the OpenAPI pattern and parses', () => {
  const pattern = new RegExp(QUANTITY_PATTERN);
  fc.assert(
    fc.property(text, (t) => {
      assert.match(t, pattern);
      Quantity.parse(t);
    }),
  );
});

test('parse(toString(q)) equals q, and the text is a fixed point', () => {
  fc.assert(
    fc.property(quantity, (q) => {
      const again = Quantity.parse(q.toString());
      assert.ok(again.equals(q), `${q} re-parsed is ${again}`);
      assert.equal(again.toString(), q.toString());
    }),
  );
});

test('a computed canonical text has the canonical shape and is idempotent', () => {
  fc.assert(
    fc.property(quantity, (q) => {
      const computed = q.add('0').toString(); // add drops a text kept from parsing
      assert.match(computed, CANONICAL);
      assert.equal(Quantity.parse(computed).add('0').toString(), computed);
      assert.ok(Quantity.parse(computed).equals(q));
    }),
  );
});

test('cmp is antisymmetric, transitive, and the sign of the difference', () => {
  fc.assert(
    fc.property(quantity, quantity, quantity, (a, b, c) => {
      assert.equal(a.cmp(b), b.cmp(a) === 0 ? 0 : -b.cmp(a));
      assert.equal(a.cmp(b), a.sub(b).sign());
      assert.equal(a.cmp(a), 0);
      const [x, y, z] = [a, b, c].sort((p, q) => p.cmp(q));
      assert.ok(x !== undefined && y !== undefined && z !== undefined);
      assert.ok(x.cmp(z) <= 0 && x.cmp(y) <= 0 && y.cmp(z) <= 0);
    }),
  );
});

test('add and sub are exact inverses, add commutes, mul is repeated add', () => {
  fc.assert(
    fc.property(quantity, quantity, (a, b) => {
      assert.ok(a.add(b).sub(b).equals(a), `${a} + ${b} - ${b}`);
      assert.ok(a.sub(b).add(b).equals(a), `${a} - ${b} + ${b}`);
      assert.ok(a.add(b).equals(b.add(a)));
      assert.ok(a.sub(a).isZero());
      assert.ok(a.mul(3).equals(a.add(a).add(a)));
      assert.ok(a.mul(-1).equals(a.neg()));
    }),
  );
});

test('value() is the value rounded away from zero, milliValue() a thousand times finer', () => {
  fc.assert(
    fc.property(quantity, (q) => {
      const v = Quantity.parse(q.value().toString());
      const towardZero = q.sign() >= 0 ? v.sub('1') : v.add('1');
      if (q.sign() >= 0) assert.ok(v.cmp(q) >= 0 && towardZero.cmp(q) < 0, `${q} → ${v}`);
      else assert.ok(v.cmp(q) <= 0 && towardZero.cmp(q) > 0, `${q} → ${v}`);
      const m = Quantity.parse(`${q.milliValue()}m`);
      assert.ok(q.sign() >= 0 ? m.cmp(q) >= 0 : m.cmp(q) <= 0, `${q} → ${m}`);
    }),
  );
});
