/**
 * @module chaos/watch-gate
 * One watch's event stream as the fault proxy (chaos/api-proxy) passes it on: whole lines, delivered at once or held
 * while the proxy holds watches, then released in order or coalesced per object (`coalesced`: what a client that
 * missed the states in between sees).
 *
 * Guarantees: no event is lost or reordered unless coalescing is asked for; a watch the apiserver ended ends for the
 * client only once what was held was delivered.
 */

/** One watch's events, passed through as whole lines, held while the proxy holds watches. */
export class WatchGate {
  #partial = '';
  #held: string[] = [];
  #ended = false;
  readonly #deliver: (line: string) => void;
  readonly #holding: () => boolean;
  readonly #end: () => void;
  constructor(deliver: (line: string) => void, holding: () => boolean, end: () => void) {
    this.#deliver = deliver;
    this.#holding = holding;
    this.#end = end;
  }

  /** The apiserver ended the watch: it ends for the client now, or once what is held was delivered. */
  finish(): void {
    this.#ended = true;
    if (this.#held.length === 0) this.#end();
  }

  /** Takes a chunk of the apiserver's stream; complete lines go on (or are held). */
  push(chunk: string): void {
    const text = this.#partial + chunk;
    const lines = text.split('\n');
    this.#partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line.length === 0) continue;
      if (this.#holding() || this.#held.length > 0) this.#held.push(line);
      else this.#deliver(line);
    }
  }

  /** Delivers what was held, in order or coalesced; returns how many events coalescing removed. */
  release(coalesce: boolean): number {
    const held = this.#held;
    this.#held = [];
    const out = coalesce ? coalesced(held) : held;
    for (const line of out) this.#deliver(line);
    if (this.#ended) this.#end();
    return held.length - out.length;
  }
}

interface WatchLine {
  readonly type?: string;
  readonly object?: {
    readonly metadata?: { readonly namespace?: string; readonly name?: string; readonly uid?: string };
  };
}

/**
 * Held events as a client that missed the states in between sees them: per object (by uid, else namespace/name), one
 * event with its last state, in the order of each object's last event: ADDED if it was added while held, DELETED if
 * it was deleted, else MODIFIED; an object added and deleted while held is dropped. Of the bookmarks, the last is kept;
 * an ERROR, and a line that is not an event, stay where they were.
 */
export function coalesced(lines: readonly string[]): string[] {
  const parsed = lines.map((line) => {
    try {
      return { line, event: JSON.parse(line) as WatchLine };
    } catch {
      return { line, event: undefined };
    }
  });
  const keyOf = (e: WatchLine) => {
    const m = e.object?.metadata;
    return m?.uid ?? `${m?.namespace ?? ''}/${m?.name ?? ''}`;
  };
  const first = new Map<string, string>();
  const last = new Map<string, number>();
  let lastBookmark = -1;
  parsed.forEach(({ event }, i) => {
    const type = event?.type;
    if (type === 'BOOKMARK') lastBookmark = i;
    else if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') {
      const key = keyOf(event as WatchLine);
      if (!first.has(key)) first.set(key, type);
      last.set(key, i);
    }
  });
  const out: string[] = [];
  parsed.forEach(({ line, event }, i) => {
    const type = event?.type;
    if (type === 'BOOKMARK') {
      if (i === lastBookmark) out.push(line);
      return;
    }
    if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') {
      out.push(line);
      return;
    }
    const key = keyOf(event as WatchLine);
    if (last.get(key) !== i) return;
    const wasAdded = first.get(key) === 'ADDED';
    if (type === 'DELETED') {
      if (!wasAdded) out.push(line);
      return;
    }
    out.push(JSON.stringify({ ...event, type: wasAdded ? 'ADDED' : 'MODIFIED' }));
  });
  return out;
}
