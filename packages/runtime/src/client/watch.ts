/**
 * @module client/watch
 * One watch request as an async stream of events. Decodes the stream incrementally, one event at a time, never the
 * whole stream: newline-delimited JSON as a UTF-8 stream (a character split across network chunks is decoded whole),
 * or, for a built-in kind when the client asks for protobuf, length-prefixed protobuf frames (client/protobuf/codec.ts,
 * with the caller's field mask; a frame split across chunks is decoded once whole). The objects are the same either
 * way. Ends normally when the server closes the watch (its `timeoutSeconds` elapsed);
 * throws an `ApiError` for an ERROR event (410 Gone for an expired resourceVersion), for a network failure, when the
 * caller aborts (`Aborted`), and — the silent-hang guard — when no event or bookmark arrives for
 * `inactivityTimeoutMs` (`Inactive`).
 */
import { UsageError } from '../errors.ts';
import { ApiError, type Status } from './errors.ts';
import { decodeWatchEvent, type FieldMask, FrameSplitter, hasDecoder, load, PROTOBUF } from './protobuf/codec.ts';
import { acceptOf, collectionPath, type Kind, type KubeObject } from './resource.ts';
import type { Transport } from './transport.ts';

/** What a watch event says: an object was added, modified or deleted, or (`BOOKMARK`) only a newer resourceVersion. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

/** One event of a watch. */
export interface WatchEvent<T> {
  /** What happened. */
  readonly type: WatchEventType;
  /**
   * The object after the change (a deleted object's last state); for a `BOOKMARK`, only `metadata.resourceVersion`.
   */
  readonly object: T;
}

export interface WatchRequest {
  readonly namespace?: string | undefined;
  readonly labelSelector?: string | undefined;
  readonly fieldSelector?: string | undefined;
  /** A shard selector (see `ListOptions.shardSelector`). */
  readonly shardSelector?: string | undefined;
  readonly resourceVersion: string;
  /**
   * A streaming list (KEP-3157 WatchList): the server first sends the current state as ADDED events, then a BOOKMARK
   * annotated `k8s.io/initial-events-end: "true"`, then changes (`resourceVersionMatch=NotOlderThan`).
   */
  readonly sendInitialEvents?: boolean | undefined;
  /** Server-side timeout. */
  readonly timeoutSeconds: number;
  /** Client-side: longest silence (no event, no bookmark) tolerated. */
  readonly inactivityTimeoutMs: number;
  /** Called once the server accepted the watch (200), before any event. */
  readonly onOpen?: (() => void) | undefined;
  readonly signal: AbortSignal;
  /** A second signal that also ends the watch (a client's bound signal). */
  readonly bound?: AbortSignal | undefined;
  /** Asked before the watch request is sent (a client's guard): throws to refuse it (`Aborted`). */
  readonly guard?: (() => void) | undefined;
  /** Ask for protobuf where the kind has a decoder (its module loaded by the caller). */
  readonly protobuf?: boolean | undefined;
  /** The fields of a protobuf event's object to decode (default: all). */
  readonly mask?: FieldMask | undefined;
}

/**
 * Throws `UsageError` (`InvalidArgument`) naming the field when a request's timeouts are missing or out of range, as
 * they can be from JavaScript: without them a watch would end at once as `Inactive`.
 */
export function checkWatchRequest(req: Partial<WatchRequest>): void {
  const { timeoutSeconds, inactivityTimeoutMs } = req;
  if (!Number.isInteger(timeoutSeconds) || (timeoutSeconds as number) < 0)
    throw new UsageError(
      'InvalidArgument',
      `watch: timeoutSeconds must be a whole number of seconds ≥ 0 (0: the server's default), got ${timeoutSeconds}`,
    );
  if (!Number.isFinite(inactivityTimeoutMs) || (inactivityTimeoutMs as number) <= 0)
    throw new UsageError(
      'InvalidArgument',
      `watch: inactivityTimeoutMs must be a number of milliseconds > 0, got ${inactivityTimeoutMs}`,
    );
}

type RawEvent<T> = { type: WatchEventType | 'ERROR'; object: T | Status };

export async function* watchEvents<T extends KubeObject>(
  transport: Transport,
  r: Kind<T>,
  req: WatchRequest,
): AsyncGenerator<WatchEvent<T>> {
  const path = collectionPath(r, req.namespace);
  const local = new AbortController();
  const onAbort = () => local.abort(req.signal.reason);
  req.signal.addEventListener('abort', onAbort, { once: true });
  let idle: NodeJS.Timeout | undefined;
  let silent = false;
  // one timer for the whole watch, pushed back on each event (refresh() re-arms it without a new timer)
  const arm = () => {
    if (idle) idle.refresh();
    else
      idle = setTimeout(() => {
        silent = true;
        local.abort();
      }, req.inactivityTimeoutMs);
  };
  try {
    arm();
    if (req.protobuf && !r.metadataOnly && hasDecoder(r.apiVersion, r.kind)) await load(r.apiVersion, r.kind);
    const res = await transport.stream({
      path,
      query: {
        watch: 1,
        resourceVersion: req.resourceVersion,
        allowWatchBookmarks: true,
        ...(req.sendInitialEvents ? { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan' } : {}),
        timeoutSeconds: req.timeoutSeconds,
        labelSelector: req.labelSelector,
        fieldSelector: req.fieldSelector,
        shardSelector: req.shardSelector,
      },
      accept: acceptOf(r, false, req.protobuf),
      signal: local.signal,
      bound: req.bound,
      guard: req.guard,
    });
    req.onOpen?.();
    const events = res.headers['content-type']?.startsWith(PROTOBUF)
      ? protobufEvents<T>(res, req.mask, path)
      : jsonEvents<T>(res);
    for await (const event of events) {
      arm();
      if (event.type === 'ERROR') {
        const status = event.object as Status;
        throw ApiError.fromResponse(status.code ?? 500, status, `WATCH ${path}`);
      }
      yield event as WatchEvent<T>;
    }
  } catch (err) {
    if (silent) {
      throw new ApiError('Inactive', `WATCH ${path}: no event or bookmark for ${req.inactivityTimeoutMs} ms`, {
        request: `WATCH ${path}`,
      });
    }
    if (req.signal.aborted || req.bound?.aborted)
      throw new ApiError('Aborted', `WATCH ${path}: aborted`, { cause: req.signal.reason ?? req.bound?.reason });
    if (err instanceof ApiError) throw err;
    throw new ApiError('Network', `WATCH ${path}: ${(err as Error).message}`, { cause: err, request: `WATCH ${path}` });
  } finally {
    clearTimeout(idle);
    req.signal.removeEventListener('abort', onAbort);
    local.abort();
  }
}

/** The events of a newline-delimited JSON watch stream. */
async function* jsonEvents<T>(res: AsyncIterable<Buffer>): AsyncGenerator<RawEvent<T>> {
  const decoder = new TextDecoder('utf-8');
  let pending = '';
  for await (const chunk of res) {
    pending += decoder.decode(chunk, { stream: true });
    // lines are parsed where they lie (no copy of the rest per line); the unfinished tail is kept for the next chunk
    let start = 0;
    let newline = pending.indexOf('\n');
    while (newline >= 0) {
      const from = start;
      const to = newline;
      start = newline + 1;
      newline = pending.indexOf('\n', start);
      if (to - from <= 2 && pending.slice(from, to).trim().length === 0) continue;
      yield JSON.parse(pending.slice(from, to)) as RawEvent<T>;
    }
    pending = start === 0 ? pending : pending.slice(start);
  }
}

/** The events of a protobuf watch stream: frames of a 4-byte length and a WatchEvent. */
async function* protobufEvents<T>(
  res: AsyncIterable<Buffer>,
  mask: FieldMask | undefined,
  path: string,
): AsyncGenerator<RawEvent<T>> {
  const frames = new FrameSplitter();
  for await (const chunk of res) {
    for (const frame of frames.push(chunk)) yield decodeWatchEvent(frame, mask) as unknown as RawEvent<T>;
  }
  if (frames.pendingBytes > 0)
    throw new ApiError('Network', `WATCH ${path}: the stream ended inside an event (${frames.pendingBytes} bytes)`, {
      request: `WATCH ${path}`,
    });
}
