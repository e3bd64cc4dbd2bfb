/**
 * @module client/protobuf/reader
 * Reads protobuf's wire format (varints, fixed 32/64-bit values, length-delimited fields) from one buffer, and turns
 * the seven apimachinery types whose JSON form is their own (Time, MicroTime, Duration, Quantity, IntOrString,
 * RawExtension, FieldsV1) into exactly the JSON value the apiserver would have sent.
 *
 * Guarantees:
 * - Never reads past the field or buffer it was given: a truncated buffer, a length past its end, an over-long
 *   varint or a group wire type throw an `ApiError` (`Malformed`), never a partial object.
 * - Integers are exact up to 2^53 and round like `JSON.parse` above it (int64 through BigInt); int32 values are
 *   sign-extended as the Go encoder writes them.
 * - Strings are decoded as UTF-8 with U+FFFD for each invalid byte, as Go's JSON encoder writes them; bytes become
 *   standard base64 (Go's `[]byte` JSON).
 * - A map key `__proto__` becomes an own property, as `JSON.parse` makes it, never the object's prototype.
 *
 * Hand-written rather than on @bufbuild/protobuf's `BinaryReader`: the generated decoders turn each field straight
 * into its JSON value (timestamps as RFC 3339 text, int64 as numbers, bytes as base64), with no message objects in
 * between, and read strings with Node's own UTF-8 slice of the buffer (no view object per string).
 * tools/protobuf/bench.ts measures the decode per pod against `JSON.parse` of the same list.
 */
import { ApiError } from '../errors.ts';
import { goReplaced } from './utf8.ts';

/** A JSON object being built by a decoder. */
export type Obj = Record<string, unknown>;

/**
 * Which fields a decoder keeps: `fields` names JSON fields (true: keep whole, false: skip, a mask: keep that
 * field's own fields by it); `rest` says what happens to a field not named.
 */
export interface FieldMask {
  readonly rest: boolean;
  readonly fields: ReadonlyMap<string, FieldMask | boolean>;
}

/** Whether `m` keeps field `k` at all. */
export function keeps(m: FieldMask, k: string): boolean {
  return (m.fields.get(k) ?? m.rest) !== false;
}

/** The mask of field `k`'s own fields under `m` (undefined: keep them all). */
export function inner(m: FieldMask | undefined, k: string): FieldMask | undefined {
  if (m === undefined) return undefined;
  const v = m.fields.get(k);
  return typeof v === 'object' ? v : undefined;
}

const TWO32 = 4294967296;
/** Seconds of Go's zero time (0001-01-01T00:00:00Z) from the Unix epoch: `metav1.Time` writes it as `null`. */
const GO_ZERO_SECONDS = -62135596800;
const utf8 = new TextDecoder('utf-8');

export class Reader {
  pos = 0;
  readonly buf: Uint8Array;
  /** Where the buffer (or the part of it given) ends. */
  readonly limit: number;

  /** `buf`, when it is a Node Buffer. */
  readonly #node: Buffer | undefined;

  constructor(buf: Uint8Array, start = 0, limit = buf.length) {
    this.buf = buf;
    this.#node = Buffer.isBuffer(buf) ? buf : undefined;
    this.pos = start;
    this.limit = limit;
  }

  fail(what: string): never {
    throw new ApiError('Malformed', `protobuf: ${what} at byte ${this.pos}`);
  }

  /** A varint of up to 32 bits (tags, lengths, enum values), as an unsigned number. */
  uint32(): number {
    const b = this.buf;
    let p = this.pos;
    if (p >= this.limit) this.fail('a varint past the end');
    let c = b[p++] as number;
    if (c < 0x80) {
      this.pos = p;
      return c;
    }
    let v = c & 0x7f;
    let shift = 7;
    while (shift < 35) {
      if (p >= this.limit) this.fail('a varint past the end');
      c = b[p++] as number;
      v += (c & 0x7f) * 2 ** shift;
      if (c < 0x80) {
        this.pos = p;
        return v % TWO32;
      }
      shift += 7;
    }
    // a 64-bit varint read as 32 bits (a negative int32, written sign-extended): its last five bytes carry no more
    for (let i = 0; i < 5; i++) {
      if (p >= this.limit) this.fail('a varint past the end');
      if ((b[p++] as number) < 0x80) {
        this.pos = p;
        return v % TWO32;
      }
    }
    return this.fail('a varint longer than 10 bytes');
  }

  /** A field's tag (number << 3 | wire type). */
  tag(): number {
    return this.uint32();
  }

  /** Reads a length and returns where the field it prefixes ends. */
  end(): number {
    const n = this.uint32();
    const e = this.pos + n;
    if (e > this.limit) this.fail(`a length of ${n} past the end`);
    return e;
  }

  int32(): number {
    return this.uint32() | 0;
  }

  bool(): boolean {
    return this.uint32() !== 0;
  }

  /** An int64 varint as a number (exact below 2^53). */
  int64(): number {
    const b = this.buf;
    let p = this.pos;
    let lo = 0;
    let hi = 0;
    let shift = 0;
    for (; shift < 28; shift += 7) {
      if (p >= this.limit) this.fail('a varint past the end');
      const c = b[p++] as number;
      lo |= (c & 0x7f) << shift;
      if (c < 0x80) {
        this.pos = p;
        return lo >>> 0;
      }
    }
    if (p >= this.limit) this.fail('a varint past the end');
    let c = b[p++] as number;
    lo |= (c & 0x0f) << 28;
    hi = (c & 0x7f) >> 4;
    if (c >= 0x80) {
      for (shift = 3; shift < 32; shift += 7) {
        if (p >= this.limit) this.fail('a varint past the end');
        c = b[p++] as number;
        hi |= (c & 0x7f) << shift;
        if (c < 0x80) break;
      }
      if (c >= 0x80) this.fail('a varint longer than 10 bytes');
    }
    this.pos = p;
    lo >>>= 0;
    hi >>>= 0;
    if (hi < 0x200000) return hi * TWO32 + lo;
    return Number(BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)));
  }

  double(): number {
    if (this.pos + 8 > this.limit) this.fail('a double past the end');
    const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8).getFloat64(0, true);
    this.pos += 8;
    return v;
  }

  /** A length-delimited string. */
  string(): string {
    const e = this.end();
    const b = this.buf;
    let p = this.pos;
    // Node's own UTF-8 slice where the buffer is a Buffer (no view object per string), else TextDecoder
    if (this.#node !== undefined) {
      this.pos = e;
      return goReplaced(this.#node.toString('utf8', p, e), b, p, e);
    }
    const n = e - p;
    if (n < 32) {
      let s = '';
      for (; p < e; p++) {
        const c = b[p] as number;
        if (c >= 0x80) break;
        s += String.fromCharCode(c);
      }
      if (p === e) {
        this.pos = e;
        return s;
      }
      p = this.pos;
    }
    this.pos = e;
    return goReplaced(utf8.decode(b.subarray(p, e)), b, p, e);
  }

  /** A length-delimited bytes field as base64 (Go's JSON for `[]byte`). */
  base64(): string {
    const e = this.end();
    const s = Buffer.from(this.buf.buffer, this.buf.byteOffset + this.pos, e - this.pos).toString('base64');
    this.pos = e;
    return s;
  }

  /** A length-delimited bytes field, as a view into the buffer. */
  bytes(): Uint8Array {
    const e = this.end();
    const v = this.buf.subarray(this.pos, e);
    this.pos = e;
    return v;
  }

  /**
   * A field with tag `t` that the message's generated decoder does not know: the apiserver's types are newer than the
   * pinned ones. Throws `Malformed`, so the answer is asked for again in JSON (which carries every field) and the kind
   * is read as JSON from then on: an object decoded without a field could erase it when written back.
   */
  unknown(t: number): never {
    this.fail(`field ${t >>> 3} is not in the pinned Kubernetes types (an apiserver newer than this client?)`);
  }

  /** Skips the value of a field with tag `t`. */
  skip(t: number): void {
    switch (t & 7) {
      case 0:
        this.uint32();
        return;
      case 1:
        this.pos += 8;
        break;
      case 2:
        this.pos = this.end();
        return;
      case 5:
        this.pos += 4;
        break;
      default:
        this.fail(`wire type ${t & 7} (field ${t >>> 3})`);
    }
    if (this.pos > this.limit) this.fail('a fixed-size value past the end');
  }

  /** `metav1.Time` (a Timestamp message ending at `end`): RFC 3339 in UTC to the second, `null` for the zero time. */
  time(end: number): string | null {
    const [seconds] = this.timestamp(end);
    if (seconds === undefined || seconds === GO_ZERO_SECONDS) return null;
    return rfc3339(seconds, '');
  }

  /** `metav1.MicroTime`: RFC 3339 in UTC with six fractional digits, `null` for the zero time. */
  microTime(end: number): string | null {
    const [seconds, nanos] = this.timestamp(end);
    if (seconds === undefined || (seconds === GO_ZERO_SECONDS && nanos < 1000)) return null;
    return rfc3339(seconds, `.${String(Math.floor(nanos / 1000)).padStart(6, '0')}`);
  }

  private timestamp(end: number): [number | undefined, number] {
    if (this.pos === end) return [undefined, 0];
    let seconds = 0;
    let nanos = 0;
    while (this.pos < end) {
      const t = this.tag();
      if (t === 8) seconds = this.int64();
      else if (t === 16) nanos = this.int32();
      else this.skip(t);
    }
    return [seconds, nanos];
  }

  /** `metav1.Duration`: Go's `time.Duration.String()` of its nanoseconds. */
  duration(end: number): string {
    let ns = 0n;
    while (this.pos < end) {
      const t = this.tag();
      if (t === 8) ns = this.int64Big();
      else this.skip(t);
    }
    return goDuration(ns);
  }

  private int64Big(): bigint {
    const start = this.pos;
    let v = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.limit) this.fail('a varint past the end');
      const c = this.buf[this.pos++] as number;
      v |= BigInt(c & 0x7f) << shift;
      if (c < 0x80) break;
      shift += 7n;
      if (this.pos - start >= 10) this.fail('a varint longer than 10 bytes');
    }
    return BigInt.asIntN(64, v);
  }

  /** `resource.Quantity`: its canonical string (the apiserver writes it canonical); "0" when empty. */
  quantity(end: number): string {
    let s = '0';
    while (this.pos < end) {
      const t = this.tag();
      if (t === 10) s = this.string() || '0';
      else this.skip(t);
    }
    return s;
  }

  /** `intstr.IntOrString`: the string when its type says string (1), else the integer. */
  intOrString(end: number): number | string {
    let type = 0;
    let int = 0;
    let str = '';
    while (this.pos < end) {
      const t = this.tag();
      if (t === 8) type = this.int64();
      else if (t === 16) int = this.int32();
      else if (t === 26) str = this.string();
      else this.skip(t);
    }
    return type === 1 ? str : int;
  }

  /** `runtime.RawExtension` and `metav1.FieldsV1`: their raw JSON, parsed; `null` when there is none. */
  rawJson(end: number): unknown {
    let raw: Uint8Array | undefined;
    while (this.pos < end) {
      const t = this.tag();
      if (t === 10) raw = this.bytes();
      else this.skip(t);
    }
    if (raw === undefined || raw.length === 0) return null;
    try {
      return JSON.parse(utf8.decode(raw));
    } catch (err) {
      throw new ApiError('Malformed', 'protobuf: an embedded JSON value (RawExtension or FieldsV1) is not JSON', {
        cause: err,
      });
    }
  }
}

/** Sets `m[key] = v` as an own property even for `__proto__` (as `JSON.parse` does). */
export function setKey(m: Obj, key: string, v: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(m, key, { value: v, enumerable: true, writable: true, configurable: true });
  else m[key] = v;
}

/** The RFC 3339 text of recent seconds: a list's timestamps repeat (objects made and changed in the same seconds). */
const SECONDS = new Map<number, string>();

function rfc3339(seconds: number, fraction: string): string {
  let text = SECONDS.get(seconds);
  if (text === undefined) {
    text = new Date(seconds * 1000).toISOString().slice(0, 19); // 2026-12-03T08:00:00 for years 0000–9999
    if (SECONDS.size >= 4096) SECONDS.clear();
    SECONDS.set(seconds, text);
  }
  return `${text}${fraction}Z`;
}

/** Go's `time.Duration.String()`: "1h2m3.5s", "1.5ms", "0s". */
export function goDuration(ns: bigint): string {
  if (ns === 0n) return '0s';
  const neg = ns < 0n;
  const u = neg ? -ns : ns;
  let s: string;
  if (u < 1_000_000_000n) {
    // below a second: the largest unit that keeps an integer part
    const [unit, scale] = u < 1000n ? ['ns', 1n] : u < 1_000_000n ? ['µs', 1000n] : ['ms', 1_000_000n];
    s = fractional(u, scale) + unit;
  } else {
    const secs = u / 1_000_000_000n;
    const frac = fractional(u % 1_000_000_000n, 1_000_000_000n);
    const h = secs / 3600n;
    const m = (secs / 60n) % 60n;
    const sec = `${secs % 60n}${frac === '0' ? '' : frac.slice(1)}s`;
    s = h > 0n ? `${h}h${m}m${sec}` : m > 0n ? `${m}m${sec}` : sec;
  }
  return neg ? `-${s}` : s;
}

/** `v / scale` in decimal with its trailing zeros dropped ("1.5", "3", for a fraction of a unit "0.25"). */
function fractional(v: bigint, scale: bigint): string {
  const whole = v / scale;
  const rest = v % scale;
  if (rest === 0n) return `${whole}`;
  const digits = String(scale).length - 1;
  let f = String(rest).padStart(digits, '0');
  while (f.endsWith('0')) f = f.slice(0, -1);
  return `${whole}.${f}`;
}
