/**
 * @module client/protobuf/codec
 * The Kubernetes protobuf encoding of built-in kinds (`application/vnd.kubernetes.protobuf`), read into the same
 * plain JSON-shaped objects a JSON answer gives: an object or list is the 4 bytes `k8s\0` and a `runtime.Unknown`
 * (its `apiVersion` and `kind`, and the object's bytes); a watch (`;stream=watch`) is frames of a 4-byte big-endian
 * length and a `metav1.WatchEvent` whose object is such an envelope.
 *
 * Guarantees:
 * - A decoded object deep-equals `JSON.parse` of the apiserver's JSON answer for the same object (the differential
 *   test checks every built-in kind), with `apiVersion` and `kind` set from the envelope on the top-level object.
 * - Decoders load lazily, one module per API group version, on the first `load` of a kind of it; decoding a kind
 *   whose module is not loaded, or that has no decoder, is an `ApiError` (`Malformed`) naming it, never a guess.
 * - A kind whose answer fails to decode — a field the pinned types do not have (a newer apiserver), an encoding this
 *   client does not read, bytes that break off — is not offered as protobuf again in this process (`hasDecoder` says
 *   no), so its gets, lists and watches go on in JSON, which carries every field; so are the kinds of a decoder
 *   module that fails to load. A field is never dropped silently.
 * - A `FieldMask` skips the fields it drops without decoding them (a length skip), and never adds a field the JSON
 *   answer would not have. It is the mask of the kind read: a `Status` (a watch's ERROR event, an error answer) is
 *   always decoded whole, so its `code` and `reason` reach the caller whatever the mask.
 *
 * Why generated decoders rather than a protobuf library: `@bufbuild/protobuf` over core/v1's descriptor set decodes a
 * kwok pod in 1.6–2.6× these decoders' time (`node tools/protobuf/bench.ts`, 2,000 pods, three runs), into protobuf
 * messages (int64 as bigint, Time as seconds and nanos, Quantity and IntOrString as messages) that would still have
 * to become the JSON shape every caller and cache transform expects; its `toJson` makes that 6–7×, and still not the
 * apiserver's JSON (no omitempty, Time not RFC 3339). A mask, too, needs the decoder to know the JSON names.
 */
import { ApiError } from '../errors.ts';
import { KINDS, MODULES } from './kinds.ts';
import { type FieldMask, type Obj, Reader } from './reader.ts';

export type { FieldMask } from './reader.ts';

/**
 * Where the runtime's own callers (the cache's reflectors) put the field mask of a list or watch in its options:
 * internal, not part of the public options.
 */
export const MASK: unique symbol = Symbol('opkit.protobuf.mask');
/** Options that may carry a field mask under `MASK`. */
export interface Masked {
  readonly [MASK]?: FieldMask | undefined;
}

/** The media type of the protobuf encoding. */
export const PROTOBUF = 'application/vnd.kubernetes.protobuf';
/** The envelope's first four bytes: `k8s\0`. */
const MAGIC = [0x6b, 0x38, 0x73, 0x00] as const;

type Decoder = (r: Reader, end: number, o: Obj, m?: FieldMask) => Obj;
const loaded = new Map<string, Readonly<Record<string, Decoder>>>();
const loading = new Map<string, Promise<void>>();

/** The kinds (`apiVersion kind`) whose decoding failed once: read as JSON from then on. */
const undecodable = new Set<string>();
/** The decoder modules that failed to load (a file missing from a bundle or an image): their kinds are read as JSON. */
const unloadable = new Set<string>();

/**
 * Whether the kind `kind` of `apiVersion` has a protobuf decoder (whether or not it is loaded yet) that has not failed
 * on an answer of this apiserver, nor failed to load.
 */
export function hasDecoder(apiVersion: string, kind: string): boolean {
  const key = `${apiVersion} ${kind}`;
  const entry = KINDS.get(key);
  return entry !== undefined && !undecodable.has(key) && !unloadable.has(entry[0]);
}

/**
 * Loads the decoders of the kinds named (`apiVersion kind`), and of `Status`; resolves at once when they are. Never
 * rejects: a module that fails to load makes `hasDecoder` say no for its kinds, so their reads ask for JSON.
 */
export function load(apiVersion: string, ...kinds: readonly string[]): Promise<void> | undefined {
  const waits: Promise<void>[] = [];
  for (const key of [`${apiVersion} ${kinds[0]}`, ...kinds.slice(1).map((k) => `${apiVersion} ${k}`), 'v1 Status']) {
    const entry = KINDS.get(key);
    if (entry === undefined) continue;
    const [mod] = entry;
    if (loaded.has(mod) || unloadable.has(mod)) continue;
    let p = loading.get(mod);
    if (p === undefined) {
      const loader = MODULES[mod];
      if (loader === undefined) continue;
      p = loader().then(
        (ns) => {
          loaded.set(mod, ns as Readonly<Record<string, Decoder>>);
        },
        () => {
          unloadable.add(mod);
          loading.delete(mod);
        },
      );
      loading.set(mod, p);
    }
    waits.push(p);
  }
  return waits.length === 0 ? undefined : Promise.all(waits).then(() => undefined);
}

function decoderOf(apiVersion: string, kind: string): Decoder {
  const entry = KINDS.get(`${apiVersion} ${kind}`);
  if (entry === undefined)
    throw new ApiError('Malformed', `protobuf: no decoder for ${kind} of ${apiVersion} (ask for JSON for it)`);
  const fn = loaded.get(entry[0])?.[entry[1]];
  if (fn === undefined) throw new ApiError('Malformed', `protobuf: the decoders of ${apiVersion} are not loaded`);
  return fn;
}

/** Whether `buf` starts with the envelope's magic bytes. */
export function isEnvelope(buf: Uint8Array, at = 0): boolean {
  return (
    buf.length >= at + 4 &&
    buf[at] === MAGIC[0] &&
    buf[at + 1] === MAGIC[1] &&
    buf[at + 2] === MAGIC[2] &&
    buf[at + 3] === MAGIC[3]
  );
}

/**
 * The object (or list) of an envelope in `buf[start, end)`: `k8s\0` and a `runtime.Unknown`, decoded by its kind's
 * decoder with `mask`. Throws `Malformed` for a buffer without the magic bytes, an encoding other than plain
 * protobuf, or a kind without a loaded decoder.
 */
export function decodeEnvelope(buf: Uint8Array, mask?: FieldMask, start = 0, end = buf.length): Obj {
  if (!isEnvelope(buf, start) || end - start < 4)
    throw new ApiError('Malformed', 'protobuf: the body does not start with the k8s\\0 envelope');
  const r = new Reader(buf, start + 4, end);
  let apiVersion = '';
  let kind = '';
  let rawStart = -1;
  let rawEnd = -1;
  let contentEncoding = '';
  let contentType = '';
  while (r.pos < end) {
    const t = r.tag();
    switch (t) {
      case 10: {
        const e = r.end();
        while (r.pos < e) {
          const u = r.tag();
          if (u === 10) apiVersion = r.string();
          else if (u === 18) kind = r.string();
          else r.skip(u);
        }
        break;
      }
      case 18: {
        rawEnd = r.end();
        rawStart = r.pos;
        r.pos = rawEnd;
        break;
      }
      case 26:
        contentEncoding = r.string();
        break;
      case 34:
        contentType = r.string();
        break;
      default:
        r.skip(t);
    }
  }
  try {
    if (contentEncoding !== '')
      throw new ApiError(
        'Malformed',
        `protobuf: ${kind} is in content encoding "${contentEncoding}", which this client does not read`,
      );
    if (contentType !== '' && contentType !== PROTOBUF) {
      if (contentType === 'application/json' && rawStart >= 0)
        return JSON.parse(
          Buffer.from(buf.buffer, buf.byteOffset + rawStart, rawEnd - rawStart).toString('utf8'),
        ) as Obj;
      throw new ApiError(
        'Malformed',
        `protobuf: ${kind} is wrapped as "${contentType}", which this client does not read`,
      );
    }
    const decode = decoderOf(apiVersion, kind);
    const o: Obj = { apiVersion, kind };
    const m = apiVersion === 'v1' && kind === 'Status' ? undefined : mask;
    return rawStart < 0 ? decode(r, 0, o, m) : decode(new Reader(buf, rawStart, rawEnd), rawEnd, o, m);
  } catch (err) {
    // a kind of this apiserver that this client cannot read: JSON for it from now on (the list's kind is its item's)
    undecodable.add(`${apiVersion} ${kind}`);
    if (kind.endsWith('List')) undecodable.add(`${apiVersion} ${kind.slice(0, -4)}`);
    if (err instanceof ApiError) throw err;
    throw new ApiError('Malformed', `protobuf: ${kind} of ${apiVersion} could not be decoded: ${String(err)}`, {
      cause: err,
    });
  }
}

/** One event of a protobuf watch: its type and the envelope of its object, in `frame`. */
export interface WatchFrame {
  readonly type: string;
  readonly object: Obj;
}

/** A `metav1.WatchEvent` in `frame` (one frame, without its length prefix), its object decoded with `mask`. */
export function decodeWatchEvent(frame: Uint8Array, mask?: FieldMask): WatchFrame {
  const r = new Reader(frame);
  let type = '';
  let object: Obj | undefined;
  while (r.pos < frame.length) {
    const t = r.tag();
    if (t === 10) type = r.string();
    else if (t === 18) {
      // object: a RawExtension whose raw (field 1) is the envelope
      const e = r.end();
      while (r.pos < e) {
        const u = r.tag();
        if (u === 10) {
          const re = r.end();
          object = decodeEnvelope(frame, mask, r.pos, re);
          r.pos = re;
        } else r.skip(u);
      }
    } else r.skip(t);
  }
  if (object === undefined)
    throw new ApiError('Malformed', `protobuf: a watch event (${type || 'no type'}) without an object`);
  return { type, object };
}

/** The largest watch frame read (client-go's streaming decoder has the same limit): a longer length is corrupt. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

/**
 * Splits a protobuf watch stream into frames: feed it chunks; it returns the complete frames so far (each a view of a
 * chunk, or one copy of a frame that spans several) and keeps the incomplete tail for the next chunk. Each byte is
 * copied at most once however many chunks a frame spans; a length over `MAX_FRAME_BYTES` throws `Malformed`.
 */
export class FrameSplitter {
  /** The chunks (or their tails) of the unfinished frame, and how many bytes they hold. */
  #parts: Buffer[] = [];
  #held = 0;
  /** The unfinished frame's whole size (its 4-byte length and body), once its length is known. */
  #need = 0;

  push(chunk: Buffer): Uint8Array[] {
    const frames: Uint8Array[] = [];
    let buf = chunk;
    if (this.#held > 0) {
      this.#parts.push(chunk);
      this.#held += chunk.length;
      if (this.#need === 0 && this.#held >= 4) this.#need = 4 + lengthOf(Buffer.concat(this.#parts, 4));
      if (this.#need === 0 || this.#held < this.#need) return frames;
      // the frame is whole: one copy of its parts, then the rest of the last chunk is read as usual
      const joined = Buffer.concat(this.#parts, this.#held);
      frames.push(joined.subarray(4, this.#need));
      buf = joined.subarray(this.#need);
      this.#parts = [];
      this.#held = 0;
      this.#need = 0;
    }
    let at = 0;
    while (buf.length - at >= 4) {
      const n = lengthOf(buf, at);
      if (buf.length - at - 4 < n) break;
      frames.push(buf.subarray(at + 4, at + 4 + n));
      at += 4 + n;
    }
    if (at < buf.length) {
      const rest = buf.subarray(at);
      this.#parts = [rest];
      this.#held = rest.length;
      this.#need = rest.length >= 4 ? 4 + lengthOf(rest) : 0;
    }
    return frames;
  }

  /** Bytes of an unfinished frame left over (a stream that ends mid-frame was cut off). */
  get pendingBytes(): number {
    return this.#held;
  }
}

/** The frame length at `at`, refused over `MAX_FRAME_BYTES`. */
function lengthOf(buf: Buffer, at = 0): number {
  const n = buf.readUInt32BE(at);
  if (n > MAX_FRAME_BYTES)
    throw new ApiError('Malformed', `protobuf: a watch frame of ${n} bytes, over the ${MAX_FRAME_BYTES}-byte limit`);
  return n;
}
