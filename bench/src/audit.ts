/**
 * @module audit
 * Reads the apiserver's audit log (JSON lines, level Metadata) from a byte offset: the requests one user made, by
 * verb — how the benchmarks count an operator's API requests and its writes while idle.
 */
import { open } from 'node:fs/promises';

export interface AuditEvent {
  readonly verb: string;
  readonly user: { readonly username: string };
  readonly objectRef?: { readonly resource?: string; readonly subresource?: string; readonly name?: string };
  readonly userAgent?: string;
  /** When the apiserver finished the request (RFC 3339 with microseconds). */
  readonly stageTimestamp?: string;
}

export const WRITE_VERBS: ReadonlySet<string> = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** The current size of the log: events after this offset happen later. */
export async function auditOffset(path: string): Promise<number> {
  const fh = await open(path, 'r');
  try {
    return (await fh.stat()).size;
  } finally {
    await fh.close();
  }
}

/** Events of `username` between two offsets. */
export async function auditEvents(
  path: string,
  from: number,
  to: number | undefined,
  username: string,
): Promise<AuditEvent[]> {
  const fh = await open(path, 'r');
  try {
    const end = to ?? (await fh.stat()).size;
    const buf = Buffer.alloc(Math.max(0, end - from));
    await fh.read(buf, 0, buf.length, from);
    const out: AuditEvent[] = [];
    for (const line of buf.toString('utf8').split('\n')) {
      if (!line.includes(username)) continue;
      try {
        const e = JSON.parse(line) as AuditEvent;
        if (e.user?.username === username) out.push(e);
      } catch {
        // a partial line at the edge
      }
    }
    return out;
  } finally {
    await fh.close();
  }
}

export function countByVerb(events: readonly AuditEvent[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const e of events) counts[e.verb] = (counts[e.verb] ?? 0) + 1;
  return counts;
}
