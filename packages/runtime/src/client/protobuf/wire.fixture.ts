/**
 * Test fixture (not built or shipped): a minimal protobuf writer, for the decoders' tests to build envelopes, watch
 * frames and broken bodies byte by byte as the apiserver would send them.
 */

/** A field: its number and its value (a number is a varint; a string or bytes or nested fields are length-delimited). */
export type Field = readonly [number, number | bigint | string | Uint8Array | readonly Field[]];

function varint(n: bigint): number[] {
  let v = BigInt.asUintN(64, n);
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) b |= 0x80;
    out.push(b);
  } while (v !== 0n);
  return out;
}

/** The bytes of a message made of `fields`, in order. */
export function message(fields: readonly Field[]): Buffer {
  const parts: Buffer[] = [];
  for (const [num, value] of fields) {
    if (typeof value === 'number' || typeof value === 'bigint') {
      parts.push(Buffer.from([...varint(BigInt(num << 3)), ...varint(BigInt(value))]));
      continue;
    }
    const bytes =
      typeof value === 'string'
        ? Buffer.from(value, 'utf8')
        : value instanceof Uint8Array
          ? Buffer.from(value)
          : message(value as readonly Field[]);
    parts.push(Buffer.from([...varint(BigInt((num << 3) | 2)), ...varint(BigInt(bytes.length))]), bytes);
  }
  return Buffer.concat(parts);
}

/** `k8s\0` and a runtime.Unknown of `apiVersion`/`kind` around `raw` (and a content type or encoding when given). */
export function envelope(
  apiVersion: string,
  kind: string,
  raw: Uint8Array,
  extra: { contentType?: string; contentEncoding?: string } = {},
): Buffer {
  const fields: Field[] = [
    [
      1,
      [
        [1, apiVersion],
        [2, kind],
      ],
    ],
    [2, raw],
  ];
  if (extra.contentEncoding !== undefined) fields.push([3, extra.contentEncoding]);
  if (extra.contentType !== undefined) fields.push([4, extra.contentType]);
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), message(fields)]);
}

/** A v1 ConfigMap's envelope: name, namespace, resourceVersion and `data`. */
export function configMap(name: string, namespace: string, rv: string, data: Record<string, string> = {}): Buffer {
  return envelope(
    'v1',
    'ConfigMap',
    message([
      [
        1,
        [
          [1, name],
          [3, namespace],
          [6, rv],
        ],
      ],
      ...Object.entries(data).map(
        ([k, v]): Field => [
          2,
          [
            [1, k],
            [2, v],
          ],
        ],
      ),
    ]),
  );
}

/** One watch frame: a 4-byte big-endian length and a WatchEvent of `type` around `object` (an envelope). */
export function watchFrame(type: string, object: Uint8Array): Buffer {
  const event = message([
    [1, type],
    [2, [[1, object]]],
  ]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(event.length);
  return Buffer.concat([length, event]);
}

/** A v1 Status envelope: Failure with `code`, `reason` and `message`. */
export function status(code: number, reason: string, text: string): Buffer {
  return envelope(
    'v1',
    'Status',
    message([
      [2, 'Failure'],
      [3, text],
      [4, reason],
      [6, code],
    ]),
  );
}
