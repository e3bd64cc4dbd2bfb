/**
 * `Quantity` against apimachinery's own tables: k8s.io/apimachinery/pkg/api/resource/quantity_test.go. Each test
 * names the Go test its table comes from. A Go fixture built as `decQuantity(m, e, format)` is `{ m, e }` here, and
 * its `String()` is `canonical()`; a quantity with a given format that no text of that format gives (a binary-SI 10)
 * is parsed from a binary text of the same value (`0.009765625Ki`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UsageError } from '../errors.ts';
import { compare, type Decimal, MAX_QUANTITY_DIGITS, roundUpTo, scaledInteger } from './decimal.ts';
import { QuantityError, type QuantityErrorCode } from './errors.ts';
import { canonical } from './format.ts';
import { parseQuantity, type QuantityFormat } from './parse.ts';
import { Quantity } from './quantity.ts';

const MAX_INT64 = (1n << 63n) - 1n;
const MIN_INT64 = -(1n << 63n);
const noop = () => 'test';

function d(m: bigint | number, e: number): Decimal {
  return { m: BigInt(m), e };
}

/** Asserts `q` has the value `m × 10^e`. */
function hasValue(q: Quantity, m: bigint | number, e: number, what: string): void {
  assert.equal(q.cmp(Quantity.parse(`${m}e${e}`)), 0, `${what}: ${q} is not ${m}e${e}`);
}

// TestQuantityParse: input, the expected value (mantissa, exponent) and format.
const PARSE: readonly [string, bigint | number, number, QuantityFormat][] = [
  ['0', 0, 0, 'DecimalSI'],
  ['0n', 0, 0, 'DecimalSI'],
  ['0u', 0, 0, 'DecimalSI'],
  ['0m', 0, 0, 'DecimalSI'],
  ['0Ki', 0, 0, 'BinarySI'],
  ['0k', 0, 0, 'DecimalSI'],
  ['0Mi', 0, 0, 'BinarySI'],
  ['0M', 0, 0, 'DecimalSI'],
  ['0Gi', 0, 0, 'BinarySI'],
  ['0G', 0, 0, 'DecimalSI'],
  ['0Ti', 0, 0, 'BinarySI'],
  ['0T', 0, 0, 'DecimalSI'],
  // Quantity less numbers are allowed
  ['1', 1, 0, 'DecimalSI'],
  // Binary suffixes
  ['1Ki', 1024, 0, 'BinarySI'],
  ['8Ki', 8 * 1024, 0, 'BinarySI'],
  ['7Mi', 7 * 1024 * 1024, 0, 'BinarySI'],
  ['6Gi', 6 * 1024 ** 3, 0, 'BinarySI'],
  ['5Ti', 5 * 1024 ** 4, 0, 'BinarySI'],
  ['4Pi', 4n * 1024n ** 5n, 0, 'BinarySI'],
  ['3Ei', 3n * 1024n ** 6n, 0, 'BinarySI'],
  ['10Ti', 10 * 1024 ** 4, 0, 'BinarySI'],
  ['100Ti', 100 * 1024 ** 4, 0, 'BinarySI'],
  // Decimal suffixes
  ['5n', 5, -9, 'DecimalSI'],
  ['4u', 4, -6, 'DecimalSI'],
  ['3m', 3, -3, 'DecimalSI'],
  ['9', 9, 0, 'DecimalSI'],
  ['8k', 8, 3, 'DecimalSI'],
  ['50k', 5, 4, 'DecimalSI'],
  ['7M', 7, 6, 'DecimalSI'],
  ['6G', 6, 9, 'DecimalSI'],
  ['5T', 5, 12, 'DecimalSI'],
  ['40T', 4, 13, 'DecimalSI'],
  ['300T', 3, 14, 'DecimalSI'],
  ['2P', 2, 15, 'DecimalSI'],
  ['1E', 1, 18, 'DecimalSI'],
  // Decimal exponents
  ['1E-3', 1, -3, 'DecimalExponent'],
  ['1e3', 1, 3, 'DecimalExponent'],
  ['1E6', 1, 6, 'DecimalExponent'],
  ['1e9', 1, 9, 'DecimalExponent'],
  ['1E12', 1, 12, 'DecimalExponent'],
  ['1e15', 1, 15, 'DecimalExponent'],
  ['1E18', 1, 18, 'DecimalExponent'],
  // Nonstandard but still parsable
  ['1e14', 1, 14, 'DecimalExponent'],
  ['1e13', 1, 13, 'DecimalExponent'],
  ['100.035k', 100035, 0, 'DecimalSI'],
  // Things that look like floating point
  ['0.001', 1, -3, 'DecimalSI'],
  ['0.0005k', 5, -1, 'DecimalSI'],
  ['0.005', 5, -3, 'DecimalSI'],
  ['0.05', 5, -2, 'DecimalSI'],
  ['0.5', 5, -1, 'DecimalSI'],
  ['0.00050k', 5, -1, 'DecimalSI'],
  ['0.00500', 5, -3, 'DecimalSI'],
  ['0.05000', 5, -2, 'DecimalSI'],
  ['0.50000', 5, -1, 'DecimalSI'],
  ['0.5e0', 5, -1, 'DecimalExponent'],
  ['0.5e-1', 5, -2, 'DecimalExponent'],
  ['0.5e-2', 5, -3, 'DecimalExponent'],
  ['10.035M', 10035, 3, 'DecimalSI'],
  ['1.2e3', 12, 2, 'DecimalExponent'],
  ['1.3E+6', 13, 5, 'DecimalExponent'],
  ['1.40e9', 14, 8, 'DecimalExponent'],
  ['1.53E12', 153, 10, 'DecimalExponent'],
  ['1.6e15', 16, 14, 'DecimalExponent'],
  ['1.7E18', 17, 17, 'DecimalExponent'],
  ['9.01', 901, -2, 'DecimalSI'],
  ['8.1k', 81, 2, 'DecimalSI'],
  ['7.123456M', 7123456, 0, 'DecimalSI'],
  ['6.987654321G', 6987654321, 0, 'DecimalSI'],
  ['5.444T', 5444, 9, 'DecimalSI'],
  ['40.1T', 401, 11, 'DecimalSI'],
  ['300.2T', 3002, 11, 'DecimalSI'],
  ['2.5P', 25, 14, 'DecimalSI'],
  ['1.01E', 101, 16, 'DecimalSI'],
  // Things that saturate/round
  ['3.001n', 4, -9, 'DecimalSI'],
  ['1.1E-9', 2, -9, 'DecimalExponent'],
  ['0.0000000001', 1, -9, 'DecimalSI'],
  ['0.0000000005', 1, -9, 'DecimalSI'],
  ['0.00000000050', 1, -9, 'DecimalSI'],
  ['0.5e-9', 1, -9, 'DecimalExponent'],
  ['0.9n', 1, -9, 'DecimalSI'],
  ['0.00000012345', 124, -9, 'DecimalSI'],
  ['0.00000012354', 124, -9, 'DecimalSI'],
  ['9Ei', MAX_INT64, 0, 'BinarySI'],
  ['9223372036854775807Ki', MAX_INT64, 0, 'BinarySI'],
  ['12E', 12, 18, 'DecimalSI'],
  // We'll accept fractional binary stuff, too.
  ['100.035Ki', 10243584, -2, 'BinarySI'],
  ['0.5Mi', 0.5 * 1024 * 1024, 0, 'BinarySI'],
  ['0.05Gi', 536870912, -1, 'BinarySI'],
  ['0.025Ti', 274877906944, -1, 'BinarySI'],
  // Things written by trolls
  ['0.000000000001Ki', 2, -9, 'DecimalSI'], // rounds up, changes format
  ['.001', 1, -3, 'DecimalSI'],
  ['.0001k', 100, -3, 'DecimalSI'],
  ['1.', 1, 0, 'DecimalSI'],
  ['1.G', 1, 9, 'DecimalSI'],
];

test('TestQuantityParse: value and format of each text, of its negative and of its explicit +', () => {
  for (const [text, m, e, format] of PARSE) {
    const q = Quantity.parse(text);
    hasValue(q, m, e, text);
    assert.equal(q.format, format, text);
    const negative = Quantity.parse(`-${text}`);
    hasValue(negative, -BigInt(m), e, `-${text}`);
    assert.equal(negative.format, format, `-${text}`);
    const plus = Quantity.parse(`+${text}`);
    hasValue(plus, m, e, `+${text}`);
    assert.equal(plus.format, format, `+${text}`);
  }
});

/** Asserts that parsing `text` throws a QuantityError with `code` that names the text. */
function refuses(text: string, code: QuantityErrorCode): void {
  assert.throws(
    () => Quantity.parse(text),
    (e: unknown) => {
      assert.ok(e instanceof QuantityError, `${text}: ${String(e)}`);
      assert.equal(e.code, code, text);
      assert.equal(e.text, text);
      assert.ok(e.message.includes(JSON.stringify(text)), e.message);
      assert.match(e.message, /e\.g\. 1Gi, 500m, 1\.5e3/);
      return true;
    },
  );
}

test('TestQuantityParse (invalid), TestQuantityParseNonNumericPanic, TestQuantityValueSet: typed errors', () => {
  refuses('', 'InvalidQuantity');
  refuses('1.1.M', 'InvalidQuantity');
  refuses('1+1.0M', 'InvalidQuantity');
  refuses('0.1mi', 'InvalidQuantitySuffix');
  refuses('0.1am', 'InvalidQuantity');
  refuses('aoeu', 'InvalidQuantity');
  refuses('.5i', 'InvalidQuantitySuffix');
  refuses('1i', 'InvalidQuantitySuffix');
  refuses('-3.01i', 'InvalidQuantitySuffix');
  refuses('-3.01e-', 'InvalidQuantitySuffix');
  refuses(' 1', 'InvalidQuantity'); // trailing whitespace is forbidden
  refuses('1 ', 'InvalidQuantity');
  refuses('Non-Numeric', 'InvalidQuantity');
  refuses('invalid', 'InvalidQuantity');
  refuses('lots', 'InvalidQuantity');
  refuses('1e99999999999999999999', 'InvalidQuantitySuffix'); // the exponent is no int64
  refuses('.Pi', 'InvalidQuantityNumber'); // apimachinery's slow path reads no digit (ErrNumeric)
  refuses('-.e-10', 'InvalidQuantityNumber');
  assert.throws(
    () => Quantity.parse(Number.NaN),
    (e: unknown) => e instanceof QuantityError,
  );
  assert.throws(
    () => Quantity.parse(Number.POSITIVE_INFINITY),
    (e: unknown) => e instanceof QuantityError,
  );
});

test('TestParseQuantityString: what the grammar lets through (".", "-.", "1E-3"), as apimachinery', () => {
  assert.ok(Quantity.parse('.').isZero());
  assert.ok(Quantity.parse('-.').isZero());
  assert.equal(Quantity.parse('1E-3').toString(), '1E-3', 'kept as written: apimachinery deems it canonical');
  assert.equal(Quantity.parse('1E-3').add('0').toString(), '1e-3');
  assert.equal(Quantity.parse('0.025Ti').toString(), '27487790694400m');
  assert.ok(Quantity.parse('-').isZero(), 'a sign alone is zero in apimachinery');
});

test('TestQuantityParseZero, TestQuantityCanocicalizeZero: zero is "0" whatever its suffix', () => {
  for (const text of ['0', '0Ki', '0m', '0e3', '-0', '000', '0.000'])
    assert.equal(Quantity.parse(text).toString(), '0');
  assert.equal(Quantity.parse('1000m').sub('1').toString(), '0');
});

// TestQuantityString: a value and format, its canonical text, and a non-canonical text of the same value.
const STRING: readonly [bigint | number, number, QuantityFormat, string, string][] = [
  [1024 * 1024 * 1024, 0, 'BinarySI', '1Gi', '1024Mi'],
  [300 * 1024 * 1024, 0, 'BinarySI', '300Mi', '307200Ki'],
  [6 * 1024, 0, 'BinarySI', '6Ki', ''],
  [1001 * 1024 * 1024 * 1024, 0, 'BinarySI', '1001Gi', '1025024Mi'],
  [1024 ** 4, 0, 'BinarySI', '1Ti', '1024Gi'],
  [5, 0, 'BinarySI', '5', '5000m'],
  [500, -3, 'BinarySI', '500m', '0.5'],
  [1, 9, 'DecimalSI', '1G', '1000M'],
  [1000, 6, 'DecimalSI', '1G', '0.001T'],
  [1000000, 3, 'DecimalSI', '1G', ''],
  [1000000000, 0, 'DecimalSI', '1G', ''],
  [1, -3, 'DecimalSI', '1m', '1000u'],
  [80, -3, 'DecimalSI', '80m', ''],
  [1080, -3, 'DecimalSI', '1080m', '1.08'],
  [108, -2, 'DecimalSI', '1080m', '1080000000n'],
  [10800, -4, 'DecimalSI', '1080m', ''],
  [300, 6, 'DecimalSI', '300M', ''],
  [1, 12, 'DecimalSI', '1T', ''],
  [1234567, 6, 'DecimalSI', '1234567M', ''],
  [1234567, -3, 'BinarySI', '1234567m', ''],
  [3, 3, 'DecimalSI', '3k', ''],
  [1025, 0, 'BinarySI', '1025', ''],
  [0, 0, 'DecimalSI', '0', ''],
  [0, 0, 'BinarySI', '0', ''],
  [1, 9, 'DecimalExponent', '1e9', '.001e12'],
  [1, -3, 'DecimalExponent', '1e-3', '0.001e0'],
  [1, -9, 'DecimalExponent', '1e-9', '1000e-12'],
  [80, -3, 'DecimalExponent', '80e-3', ''],
  [300, 6, 'DecimalExponent', '300e6', ''],
  [1, 12, 'DecimalExponent', '1e12', ''],
  [1, 3, 'DecimalExponent', '1e3', ''],
  [3, 3, 'DecimalExponent', '3e3', ''],
  [3, 3, 'DecimalSI', '3k', ''],
  [0, 0, 'DecimalExponent', '0', '00'],
  [1, -9, 'DecimalSI', '1n', ''],
  [80, -9, 'DecimalSI', '80n', ''],
  [1080, -9, 'DecimalSI', '1080n', ''],
  [108, -8, 'DecimalSI', '1080n', ''],
  [10800, -10, 'DecimalSI', '1080n', ''],
  [1, -6, 'DecimalSI', '1u', ''],
  [80, -6, 'DecimalSI', '80u', ''],
  [1080, -6, 'DecimalSI', '1080u', ''],
];

test('TestQuantityString: canonical text, kept on parse when canonical, computed for an alternate text', () => {
  for (const [m, e, format, expect, alternate] of STRING) {
    assert.equal(canonical(d(m, e), format, noop), expect, `${m}e${e} ${format}`);
    assert.equal(parseQuantity(expect).text, expect, `${expect}: the canonical text is kept`);
    if (alternate !== '') {
      assert.equal(parseQuantity(alternate).text, undefined, `${alternate}: not kept`);
      assert.equal(Quantity.parse(alternate).toString(), expect, alternate);
    }
    if (BigInt(m) !== 0n) assert.equal(canonical(d(-BigInt(m), e), format, noop), `-${expect}`);
  }
});

test('TestQuantityParseEmit: parse then print, and the negative', () => {
  const table: readonly [string, string][] = [
    ['1Ki', '1Ki'],
    ['1Mi', '1Mi'],
    ['1Gi', '1Gi'],
    ['1024Mi', '1Gi'],
    ['1000M', '1G'],
    ['.001Ki', '1024m'],
    ['.000001Ki', '1024u'],
    ['.000000001Ki', '1024n'],
    ['.000000000001Ki', '2n'],
  ];
  for (const [text, expect] of table) {
    assert.equal(Quantity.parse(text).toString(), expect, text);
    assert.equal(Quantity.parse(`-${text}`).toString(), `-${expect}`, `-${text}`);
  }
});

test('the issue examples: 1000Mi, 1024Mi, 0.5Gi, 1.5, and texts apimachinery keeps as written', () => {
  const table: readonly [string, string][] = [
    ['1000Mi', '1000Mi'],
    ['1024Mi', '1Gi'],
    ['0.5Gi', '512Mi'],
    ['1.5', '1500m'],
    ['1.5Gi', '1536Mi'],
    ['1.5Ki', '1536'],
    ['2048Ki', '2Mi'],
    ['1000k', '1M'],
    ['1.5e3', '1500'],
    ['12e3', '12e3'],
    ['10e2', '1e3'],
    // Kept as written (apimachinery's fast path deems them canonical), so stored so by the apiserver:
    ['1.500', '1.500'],
    ['+1Ki', '+1Ki'],
    ['01', '01'],
    ['1E3', '1E3'],
    ['1.25e5', '1.25e5'],
    // apimachinery's suffix gaps: no suffix above E, and none above Ei
    ['1000E', '1'],
    ['16Ei', '9223372036854775807'],
  ];
  for (const [text, expect] of table) assert.equal(Quantity.parse(text).toString(), expect, text);
  let big = Quantity.parse('4Ei');
  for (let i = 1; i < 256; i++) big = big.add('4Ei');
  assert.equal(big.toString(), '1', '1024Ei (2^70) has no suffix, as apimachinery prints it');
});

test('TestParseQuantity: the int64 and 18-digit boundaries print as apimachinery', () => {
  const table: readonly [string, string?][] = [
    ['-999999999999999999'],
    ['999999999999999999'],
    ['-999999999999999999.0', '-999999999999999999'],
    ['999999999999999999.0', '999999999999999999'],
    ['-999999999999999999.1', '-999999999999999999100m'],
    ['999999999999999999.1', '999999999999999999100m'],
    ['-9999999999999999999'],
    ['9999999999999999999'],
    ['-1E'],
    ['1E'],
    ['-1000000000000000000', '-1E'],
    ['1000000000000000000', '1E'],
    ['-9999999999999999999.0', '-9999999999999999999'],
    ['9999999999999999999.0', '9999999999999999999'],
    ['-1.0E', '-1E'],
    ['1.0E', '1E'],
    ['-1000000000000000000.0', '-1E'],
    ['1000000000000000000.0', '1E'],
    ['-9999999999999999999000m', '-9999999999999999999'],
    ['9999999999999999999000m', '9999999999999999999'],
    ['-9999999999999999999.1', '-9999999999999999999100m'],
    ['9999999999999999999.1', '9999999999999999999100m'],
    ['-1.0000000000000000001E', '-1000000000000000000100m'],
    ['1.0000000000000000001E', '1000000000000000000100m'],
    ['-1000000000000000000.1', '-1000000000000000000100m'],
    ['1000000000000000000.1', '1000000000000000000100m'],
    ['-1.000000000000000001E', '-1000000000000000001'],
    ['1.000000000000000001E', '1000000000000000001'],
    ['-1000000000000000001'],
    ['1000000000000000001'],
    ['-10E'],
    ['10E'],
    ['-10000000000000000000', '-10E'],
    ['10000000000000000000', '10E'],
    ['-10.0E', '-10E'],
    ['10.0E', '10E'],
    ['-10000000000000000000.0', '-10E'],
    ['10000000000000000000.0', '10E'],
    ['-10000000000000000000000m', '-10E'],
    ['10000000000000000000000m', '10E'],
    ['-10.0000000000000000001E', '-10000000000000000000100m'],
    ['10.0000000000000000001E', '10000000000000000000100m'],
    ['-10000000000000000000.1', '-10000000000000000000100m'],
    ['10000000000000000000.1', '10000000000000000000100m'],
    ['-10.000000000000000001E', '-10000000000000000001'],
    ['10.000000000000000001E', '10000000000000000001'],
    ['-10000000000000000001'],
    ['10000000000000000001'],
    ['-9223372036854775809'],
    ['9223372036854775806'],
    ['-9223372036854775809.0', '-9223372036854775809'],
    ['9223372036854775806.0', '9223372036854775806'],
    ['-9223372036854775809000m', '-9223372036854775809'],
    ['9223372036854775806000m', '9223372036854775806'],
    ['-9223372036854775809.1', '-9223372036854775809100m'],
    ['9223372036854775806.1', '9223372036854775806100m'],
    ['-9223372036854775808'],
    ['9223372036854775807'],
    ['-9223372036854775808.0', '-9223372036854775808'],
    ['9223372036854775807.0', '9223372036854775807'],
    ['-9223372036854775808000m', '-9223372036854775808'],
    ['9223372036854775807000m', '9223372036854775807'],
    ['-9223372036854775808.1', '-9223372036854775808100m'],
    ['9223372036854775807.1', '9223372036854775807100m'],
    ['-9223372036854775807'],
    ['9223372036854775808'],
    ['-9223372036854775807.0', '-9223372036854775807'],
    ['9223372036854775808.0', '9223372036854775808'],
    ['-9223372036854775807000m', '-9223372036854775807'],
    ['9223372036854775808000m', '9223372036854775808'],
    ['-9223372036854775807.1', '-9223372036854775807100m'],
    ['9223372036854775808.1', '9223372036854775808100m'],
  ];
  for (const [text, expect] of table) assert.equal(Quantity.parse(text).toString(), expect ?? text, text);
});

test('TestQuantityCmp', () => {
  const table: readonly [string, string, number][] = [
    ['0', '0', 0],
    ['100m', '50m', 1],
    ['50m', '100m', -1],
    ['10000T', '100Gi', 1],
  ];
  for (const [x, y, expect] of table) assert.equal(Quantity.parse(x).cmp(y), expect, `${x} vs ${y}`);
});

test('TestQuantityCmpInt64AndDec: comparison across scales, both ways', () => {
  const e18 = 10n ** 18n;
  const table: readonly [Decimal, Decimal, number][] = [
    [d(901, -2), d(901, -2), 0],
    [d(90, -1), d(901, -2), -1],
    [d(901, -2), d(900, -2), 1],
    [d(0, 0), d(0, 0), 0],
    [d(0, 1), d(0, -1), 0],
    [d(0, -1), d(0, 1), 0],
    [d(800, -3), d(1, 0), -1],
    [d(800, -3), d(79, -2), 1],
    [d(MAX_INT64, 0), d(1, -1), 1],
    [d(MAX_INT64, 1), d(1, 0), 1],
    [d(MAX_INT64, 1), d(1, 1), 1],
    [d(MAX_INT64, 1), d(0, 1), 1],
    [d(MAX_INT64, -16), d(1, 3), -1],
    [d(MIN_INT64, 0), d(0, 0), -1],
    [d(MIN_INT64, -18), d(-1, 0), -1],
    [d(MIN_INT64, -19), d(-1, 0), 1],
    [d(e18, -17), d(1, 1), 0],
    [d(e18, -17), d(-10, 0), 1],
    [d(-e18, -17), d(-10, 0), 0],
    [d(e18, -17), d(1, 0), 1],
    [d(e18 + 1n, -17), d(1, 1), 1],
    [d(e18 - 1n, -17), d(1, 1), -1],
  ];
  for (const [a, b, expect] of table) {
    assert.equal(compare(a, b), expect, `${a.m}e${a.e} vs ${b.m}e${b.e}`);
    assert.equal(compare(b, a), expect === 0 ? 0 : -expect, `${b.m}e${b.e} vs ${a.m}e${a.e}`);
  }
});

test('TestQuantityAddZeroPreservesSuffix, TestQuantitySubZeroPreservesSuffix', () => {
  for (const text of ['100m', '1Gi']) {
    const value = Quantity.parse(text);
    const zero = Quantity.parse('0');
    assert.equal(value.add(zero).toString(), text);
    assert.equal(zero.add(value).toString(), text);
    assert.equal(value.sub(zero).toString(), text);
    assert.equal(zero.sub(value).toString(), value.neg().toString());
  }
});

// Binary-SI fixtures of small values, as binary texts of the same value (see the file comment).
const BINARY_10 = '0.009765625Ki';
const BINARY_1 = '0.0009765625Ki';

test('TestAdd, TestSub: values, and the left operand keeps its format unless it is zero', () => {
  assert.equal(Quantity.parse(BINARY_10).format, 'BinarySI');
  const add: readonly [string, string, string, QuantityFormat][] = [
    ['10', '1e1', '20', 'DecimalSI'],
    ['10', BINARY_1, '11', 'DecimalSI'],
    [BINARY_10, '1', '11', 'BinarySI'],
    ['0', '50', '50', 'DecimalSI'],
    ['50', '0', '50', 'DecimalSI'],
    ['0', '0', '0', 'DecimalSI'],
    ['0', '1Ki', '1Ki', 'BinarySI'],
  ];
  for (const [a, b, sum, format] of add) {
    const q = Quantity.parse(a).add(b);
    assert.ok(q.equals(sum), `${a} + ${b} = ${q}`);
    assert.equal(q.format, format, `${a} + ${b}`);
  }
  const sub: readonly [string, string, string, QuantityFormat][] = [
    ['10', '1e1', '0', 'DecimalSI'],
    ['10', BINARY_1, '9', 'DecimalSI'],
    [BINARY_10, '1', '9', 'BinarySI'],
    ['0', '50', '-50', 'DecimalSI'],
    ['50', '0', '50', 'DecimalSI'],
    ['0', '0', '0', 'DecimalSI'],
  ];
  for (const [a, b, difference, format] of sub) {
    const q = Quantity.parse(a).sub(b);
    assert.ok(q.equals(difference), `${a} - ${b} = ${q}`);
    assert.equal(q.format, format, `${a} - ${b}`);
  }
  const a = Quantity.parse('1Gi');
  a.add('1Gi');
  assert.equal(a.toString(), '1Gi', 'add returns a new quantity: its operands do not change');
});

test('TestQuantityNeg, TestNeg: the opposite value, same format, never "-0"', () => {
  assert.equal(Quantity.parse('9.01').neg().toString(), '-9010m');
  assert.equal(Quantity.parse('0').neg().toString(), '0');
  assert.equal(Quantity.parse(BINARY_10).neg().format, 'BinarySI');
  assert.ok(Quantity.parse('-10').neg().equals('10'));
});

test('TestNewSet, TestMilliNewSet, TestNewScaledSet: canonical texts of integers, milli-units and scaled values', () => {
  const table: readonly [bigint | number, number, QuantityFormat, string][] = [
    [1, 0, 'DecimalSI', '1'],
    [1000, 0, 'DecimalSI', '1k'],
    [1234000, 0, 'DecimalSI', '1234k'],
    [1024, 0, 'BinarySI', '1Ki'],
    [1000000, 0, 'DecimalExponent', '1e6'],
    [1024 * 1024, 0, 'BinarySI', '1Mi'],
    [1, -3, 'DecimalSI', '1m'],
    [1000, -3, 'DecimalSI', '1'],
    [1234000, -3, 'DecimalSI', '1234'],
    [1024, -3, 'BinarySI', '1024m'],
    [1000000, -3, 'DecimalExponent', '1e3'],
    [1024 * 1024, -3, 'BinarySI', '1048576m'],
    [1, -9, 'DecimalSI', '1n'],
    [1000, -9, 'DecimalSI', '1u'],
    [1, -6, 'DecimalSI', '1u'],
    [1000, -6, 'DecimalSI', '1m'],
    [1000, -3, 'DecimalSI', '1'],
    [0, -9, 'DecimalSI', '0'],
  ];
  for (const [m, e, format, expect] of table) {
    assert.equal(canonical(d(m, e), format, noop), expect, `${m}e${e} ${format}`);
    assert.equal(Quantity.parse(expect).scaledValue(e), BigInt(m), `${expect} in 1e${e}`);
  }
  assert.equal(Quantity.parse('1Mi').value(), 1048576n); // TestQuantityValueSet
});

test('TestScaledValue: 1 × 10^from in units of 10^to, rounded up', () => {
  const table: readonly [number, number, bigint][] = [
    [-9, -9, 1n],
    [-9, -6, 1n],
    [-9, -3, 1n],
    [-9, 0, 1n],
    [-6, -9, 1000n],
    [-6, -6, 1n],
    [-6, -3, 1n],
    [-6, 0, 1n],
    [-3, -9, 1000000n],
    [-3, -6, 1000n],
    [-3, -3, 1n],
    [-3, 0, 1n],
    [0, -9, 1000000000n],
    [0, -6, 1000000n],
    [0, -3, 1000n],
    [0, 0, 1n],
    [2, -2, 10000n],
  ];
  for (const [from, to, expect] of table) assert.equal(scaledInteger(d(1, from), to, noop), expect, `${from}→${to}`);
});

test('TestQuantityRoundUp: rounding away from zero to a scale, and whether it was exact', () => {
  const table: readonly [string, number, bigint, number, boolean][] = [
    ['9.01', -3, 901n, -2, true],
    ['9.01', -2, 901n, -2, true],
    ['9.01', -1, 91n, -1, false],
    ['9.01', 0, 10n, 0, false],
    ['9.01', 1, 1n, 1, false],
    ['9.01', 2, 1n, 2, false],
    ['-9.01', -1, -91n, -1, false],
    ['-9.01', 0, -10n, 0, false],
    ['-9.01', 2, -1n, 2, false],
  ];
  for (const [text, scale, m, e, exact] of table) {
    const r = roundUpTo(d(text.startsWith('-') ? -901 : 901, -2), scale);
    assert.equal(compare(r.value, d(m, e)), 0, `${text} to 1e${scale}`);
    assert.equal(r.exact, exact, `${text} to 1e${scale}`);
  }
});

test('value() and milliValue(): exact BigInts rounded away from zero, where Go would wrap', () => {
  assert.equal(Quantity.parse('1.5').value(), 2n);
  for (const zero of ['0', '0m', '0.000', '0e-5', '0Ki']) {
    assert.equal(Quantity.parse(zero).value(), 0n, zero);
    assert.equal(Quantity.parse(zero).milliValue(), 0n, zero);
  }
  assert.equal(Quantity.parse('-1.5').value(), -2n);
  assert.equal(Quantity.parse('1.5').milliValue(), 1500n);
  assert.equal(Quantity.parse('0.1m').milliValue(), 1n);
  assert.equal(Quantity.parse('100E').value(), 10n ** 20n);
  assert.equal(Quantity.parse('1Gi').toNumber(), 1073741824);
  assert.equal(Quantity.parse('12e500').toNumber(), Number.POSITIVE_INFINITY);
});

test('numbers are read as their JSON text, as the apiserver reads a JSON number', () => {
  assert.equal(Quantity.parse(500).toString(), '500');
  assert.equal(Quantity.parse(1500).toString(), '1500');
  assert.equal(Quantity.parse(1.5).toString(), '1500m');
  assert.equal(Quantity.parse(1e21).toString(), '1e+21', 'the JSON text, kept as apimachinery keeps it');
  assert.ok(Quantity.parse(1e21).equals('1000E'));
  assert.equal(Quantity.parse(-0).toString(), '0');
});

test('huge exponents: compared without expanding, refused with QuantityOutOfRange where they must expand', () => {
  const huge = Quantity.parse('1e900000');
  assert.equal(huge.toString(), '1e900000');
  assert.equal(huge.cmp('1Ei'), 1);
  assert.equal(Quantity.parse('-1e900000').cmp('1n'), -1);
  assert.equal(Quantity.parse('1e-900000').toString(), '1e-9', 'rounded up to nano');
  const outOfRange = (e: unknown) => e instanceof QuantityError && e.code === 'QuantityOutOfRange';
  assert.throws(() => huge.add('1'), outOfRange);
  assert.throws(() => huge.value(), outOfRange);
  assert.equal(
    Quantity.parse(`1e${MAX_QUANTITY_DIGITS}`).add('1').sub('1').toString(),
    `10e${MAX_QUANTITY_DIGITS - 1}`,
  );
});

test('roundUp: away from zero to a scale, the text kept when no rounding is needed, as apimachinery', () => {
  assert.equal(Quantity.parse('+9u').roundUp(-3).toString(), '1m');
  assert.equal(Quantity.parse('-9u').roundUp(-3).toString(), '-1m');
  assert.equal(Quantity.parse('1.500').roundUp(-3).toString(), '1.500', 'already milli: kept as written');
  assert.equal(Quantity.parse('26858.219381969e3').roundUp(-3).toString(), '26858219382e-3');
  assert.equal(Quantity.parse('9.01').roundUp(0).toString(), '10');
  assert.equal(Quantity.parse('0.000000000001Ki').roundUp(-3).toString(), '1m');
  assert.equal(Quantity.parse('1Gi').roundUp(0).toString(), '1Gi');
  assert.equal(Quantity.parse('1Gi').roundUp(3).toString(), '1073742000');
  assert.equal(Quantity.parse('1.5Gi').roundUp(-3).format, 'BinarySI');
});

test('TestNewSet, TestMilliNewSet: Quantity.of and Quantity.ofMilli print as NewQuantity and NewMilliQuantity', () => {
  const of: readonly [number, QuantityFormat, string][] = [
    [1, 'DecimalSI', '1'],
    [1000, 'DecimalSI', '1k'],
    [1234000, 'DecimalSI', '1234k'],
    [1024, 'BinarySI', '1Ki'],
    [1000000, 'DecimalExponent', '1e6'],
    [1024 * 1024, 'BinarySI', '1Mi'],
  ];
  for (const [value, format, expect] of of) {
    assert.equal(Quantity.of(value, format).toString(), expect);
    assert.equal(Quantity.parse(expect).value(), BigInt(value));
  }
  const milli: readonly [number, QuantityFormat, string][] = [
    [1, 'DecimalSI', '1m'],
    [1000, 'DecimalSI', '1'],
    [1234000, 'DecimalSI', '1234'],
    [1024, 'BinarySI', '1024m'], // format changes
    [1000000, 'DecimalExponent', '1e3'],
    [1024 * 1024, 'BinarySI', '1048576m'], // format changes
  ];
  for (const [value, format, expect] of milli) assert.equal(Quantity.ofMilli(value, format).toString(), expect);
  assert.equal(Quantity.of(2n ** 70n, 'BinarySI').value(), 2n ** 70n);
  assert.throws(
    () => Quantity.of(1.5),
    (e: unknown) => e instanceof UsageError && e.code === 'InvalidArgument',
  );
  assert.throws(
    () => Quantity.of(2 ** 60),
    (e: unknown) => e instanceof UsageError,
  );
});

test('TestMul: exact products, the format kept, no overflow', () => {
  const table: readonly [string, bigint | number, string][] = [
    ['10', 10, '100'],
    ['10', 1, '10'],
    ['0', 50, '0'],
    ['50', 0, '0'],
    ['10', -10, '-100'],
    ['-50', -50, '2500'],
    [`${MAX_INT64}`, 2, `${MAX_INT64 * 2n}`],
    [`${MIN_INT64}`, -1, `${-MIN_INT64}`],
    [`${MIN_INT64}`, -10n, `${-MIN_INT64 * 10n}`],
  ];
  for (const [a, b, product] of table) assert.ok(Quantity.parse(a).mul(b).equals(product), `${a} × ${b}`);
  assert.equal(Quantity.parse(BINARY_10).mul(1).format, 'BinarySI');
  assert.equal(Quantity.parse('10Gi').mul(3).toString(), '30Gi');
});
