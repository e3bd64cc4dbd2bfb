/**
 * @module audit-log
 * Reads the audit log an `Environment` writes when started with `auditLog: true` (JSON lines, level Metadata), one
 * slice at a time: a slice holds whole lines only, so it never ends inside an event, and the next read continues at
 * the `end` it returns. How tests and benchmarks tell which requests a user made, and which of them wrote.
 */
import { open } from 'node:fs/promises';

/** The fields of an audit event (audit.k8s.io/v1 Event) that tests read. */
export interface AuditEvent {
  /** The API verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, … */
  readonly verb: string;
  /** Who made the request (`system:serviceaccount:<namespace>:<name>` for a ServiceAccount). */
  readonly user: { readonly username: string };
  /** The client's user agent, e.g. `opkit/0.1.0 (appservice-operator)`. */
  readonly userAgent?: string;
  /** What the request was for. */
  readonly objectRef?: {
    readonly resource?: string;
    readonly subresource?: string;
    readonly apiGroup?: string;
    readonly namespace?: string;
    readonly name?: string;
  };
  /** The answer's HTTP status. */
  readonly responseStatus?: { readonly code?: number };
  /** When the apiserver received the request (RFC 3339 with microseconds). */
  readonly requestReceivedTimestamp?: string;
  /** When the apiserver finished the request (RFC 3339 with microseconds). */
  readonly stageTimestamp?: string;
}

/** The verbs that change what is stored. */
export const WRITE_VERBS: ReadonlySet<string> = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** The events of one read of the audit log, and where the next read starts. */
export interface AuditLogSlice {
  /** The events read, in the log's order. */
  readonly events: AuditEvent[];
  /** The byte offset after the last whole line read: where the next slice starts. */
  readonly end: number;
}

/**
 * Where the log ends now, at a line boundary (after its last whole line): events written from now on come after this
 * offset, and a slice read from it never starts inside an event.
 */
export async function auditLogSize(path: string): Promise<number> {
  const fh = await open(path, 'r');
  try {
    let end = (await fh.stat()).size;
    const chunk = Buffer.alloc(64 * 1024);
    while (end > 0) {
      const from = Math.max(0, end - chunk.length);
      const { bytesRead } = await fh.read(chunk, 0, end - from, from);
      const newline = chunk.subarray(0, bytesRead).lastIndexOf(0x0a);
      if (newline >= 0) return from + newline + 1;
      end = from;
    }
    return 0;
  } finally {
    await fh.close();
  }
}

/** The events between byte offsets `from` (default 0) and `to` (default: the end), of `username` if given. */
export async function readAuditLog(
  path: string,
  options: { readonly from?: number; readonly to?: number; readonly username?: string } = {},
): Promise<AuditLogSlice> {
  const from = options.from ?? 0;
  const fh = await open(path, 'r');
  try {
    const to = Math.max(from, options.to ?? (await fh.stat()).size);
    const buf = Buffer.alloc(to - from);
    const { bytesRead } = await fh.read(buf, 0, buf.length, from);
    const whole = buf.subarray(0, buf.lastIndexOf(0x0a, bytesRead - 1) + 1);
    const events: AuditEvent[] = [];
    for (const line of whole.toString('utf8').split('\n')) {
      if (!line || (options.username !== undefined && !line.includes(options.username))) continue;
      try {
        const e = JSON.parse(line) as AuditEvent;
        if (options.username === undefined || e.user?.username === options.username) events.push(e);
      } catch {
        // not an event line (the apiserver writes nothing else, but a log can be cut by hand): skip it
      }
    }
    return { events, end: from + whole.length };
  } finally {
    await fh.close();
  }
}
