/**
 * @module client/protobuf/utf8
 * Strings from protobuf bytes as the apiserver's JSON has them. Go's JSON encoder writes one U+FFFD for each byte
 * that does not begin a valid UTF-8 sequence (`utf8.DecodeRune`'s step); the WHATWG decoder (Node's, the browser's)
 * writes one for each maximal invalid subpart. The two agree on valid UTF-8, which is all this module checks for in
 * the common case.
 */
import { isUtf8 } from 'node:buffer';

const utf8 = new TextDecoder('utf-8');

/**
 * `s`, the WHATWG decoding of `b[p, e)`, as Go's JSON encoder would write those bytes: where they are not valid UTF-8
 * (only then can `s` differ), one U+FFFD for each byte that does not begin a valid sequence, as `utf8.DecodeRune`
 * steps, where WHATWG writes one for each maximal invalid subpart.
 */
export function goReplaced(s: string, b: Uint8Array, p: number, e: number): string {
  // as many UTF-16 units as bytes: ASCII, or invalid bytes replaced one by one, which is what Go does too (no scan)
  if (s.length === e - p || !s.includes('\uFFFD') || isUtf8(b.subarray(p, e))) return s;
  let out = '';
  let i = p;
  while (i < e) {
    const c = b[i] as number;
    const n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    // the second byte's range narrows after E0, ED, F0 and F4 (no overlong forms, surrogates or code points > 10FFFF)
    const lo = c === 0xe0 ? 0xa0 : c === 0xf0 ? 0x90 : 0x80;
    const hi = c === 0xed ? 0x9f : c === 0xf4 ? 0x8f : 0xbf;
    let ok = n > 0 && i + n <= e;
    for (let k = 1; ok && k < n; k++) {
      const d = b[i + k] as number;
      ok = k === 1 ? d >= lo && d <= hi : d >= 0x80 && d <= 0xbf;
    }
    if (!ok) {
      out += '\uFFFD';
      i += 1;
      continue;
    }
    out += utf8.decode(b.subarray(i, i + n));
    i += n;
  }
  return out;
}
