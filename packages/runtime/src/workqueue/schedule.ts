/**
 * @module workqueue/schedule
 * The delayed adds of a work queue (`addAfter`): per key, one scheduled add at the earliest time and the highest
 * priority asked for, on one clock timer.
 *
 * Guarantees:
 * - Scheduling a key already scheduled keeps the earlier of the two times and the higher of the two priorities; a kept
 *   time keeps the key's place among keys due together, an earlier one is scheduled anew.
 * - When keys fall due, `onDue` is called for each, synchronously, in order of ready time and then of schedule order,
 *   once per live schedule (superseded entries are skipped, and dropped when they outnumber the live ones).
 * - At most one clock timer is set, for the earliest live entry; `clear()` drops every entry and cancels it.
 */
import type { Clock, Timer } from './clock.ts';

interface Scheduled<K> {
  readonly item: K;
  readonly readyAt: number;
  /** Tells a live entry from one superseded by an earlier `addAfter()`, and orders entries due together. */
  readonly seq: number;
  readonly priority: number;
}

/** A binary min-heap of scheduled adds, by ready time and then schedule order. */
class ScheduleHeap<K> {
  #entries: Scheduled<K>[] = [];

  get size(): number {
    return this.#entries.length;
  }

  peek(): Scheduled<K> | undefined {
    return this.#entries[0];
  }

  push(entry: Scheduled<K>): void {
    this.#entries.push(entry);
    this.#up(this.#entries.length - 1);
  }

  pop(): Scheduled<K> | undefined {
    const top = this.#entries[0];
    const last = this.#entries.pop();
    if (top !== undefined && last !== undefined && this.#entries.length > 0) {
      this.#entries[0] = last;
      this.#down(0);
    }
    return top;
  }

  /** Keeps only the entries `keep` accepts. */
  retain(keep: (entry: Scheduled<K>) => boolean): void {
    this.#entries = this.#entries.filter(keep);
    for (let i = (this.#entries.length >> 1) - 1; i >= 0; i--) this.#down(i);
  }

  clear(): void {
    this.#entries = [];
  }

  #less(i: number, j: number): boolean {
    const a = this.#entries[i];
    const b = this.#entries[j];
    if (a === undefined || b === undefined) return false;
    return a.readyAt < b.readyAt || (a.readyAt === b.readyAt && a.seq < b.seq);
  }

  #swap(i: number, j: number): void {
    const a = this.#entries[i];
    const b = this.#entries[j];
    if (a === undefined || b === undefined) return;
    this.#entries[i] = b;
    this.#entries[j] = a;
  }

  #up(i: number): void {
    let child = i;
    while (child > 0) {
      const parent = (child - 1) >> 1;
      if (!this.#less(child, parent)) return;
      this.#swap(child, parent);
      child = parent;
    }
  }

  #down(i: number): void {
    let parent = i;
    for (;;) {
      const left = 2 * parent + 1;
      const right = left + 1;
      let smallest = parent;
      if (this.#less(left, smallest)) smallest = left;
      if (this.#less(right, smallest)) smallest = right;
      if (smallest === parent) return;
      this.#swap(parent, smallest);
      parent = smallest;
    }
  }
}

/** The delayed adds of one queue: the earliest time and highest priority per key, and one timer. */
export class DelaySchedule<K> {
  readonly #clock: Clock;
  readonly #onDue: (item: K, priority: number) => void;
  /** The live schedule of each delayed key; heap entries not matching it are stale. */
  readonly #delayed = new Map<K, Scheduled<K>>();
  readonly #schedule = new ScheduleHeap<K>();
  #seq = 0;
  /** The one clock timer, set for the earliest scheduled add. */
  #timer: { readonly at: number; readonly timer: Timer } | undefined;

  /** A schedule on `clock` that calls `onDue` for each key as it falls due. */
  constructor(clock: Clock, onDue: (item: K, priority: number) => void) {
    this.#clock = clock;
    this.#onDue = onDue;
  }

  /** Schedules `item` at `priority`, `delayMs` from now (see the module comment for a key already scheduled). */
  schedule(item: K, delayMs: number, priority: number): void {
    const current = this.#delayed.get(item);
    const readyAt = Math.min(this.#clock.now() + delayMs, current?.readyAt ?? Infinity);
    const highest = Math.max(priority, current?.priority ?? priority);
    if (current !== undefined && current.readyAt === readyAt && current.priority === highest) return;
    // a kept time keeps its place among keys due together; an earlier one is scheduled anew
    const seq = current !== undefined && current.readyAt === readyAt ? current.seq : this.#seq++;
    const entry: Scheduled<K> = { item, readyAt, seq, priority: highest };
    this.#delayed.set(item, entry);
    this.#schedule.push(entry);
    // Superseded entries stay in the heap until they surface; drop them when they outnumber the live ones.
    if (this.#schedule.size > 64 && this.#schedule.size > 2 * this.#delayed.size) {
      this.#schedule.retain((e) => this.#delayed.get(e.item) === e);
    }
    this.#arm();
  }

  /** Drops every scheduled add and cancels the timer. */
  clear(): void {
    this.#delayed.clear();
    this.#schedule.clear();
    this.#disarm();
  }

  /** Sets the clock timer for the earliest live scheduled add, unless one is set early enough already. */
  #arm(): void {
    let next = this.#schedule.peek();
    while (next !== undefined && this.#delayed.get(next.item) !== next) {
      this.#schedule.pop();
      next = this.#schedule.peek();
    }
    if (next === undefined) {
      this.#disarm();
      return;
    }
    if (this.#timer !== undefined && this.#timer.at <= next.readyAt) return;
    this.#disarm();
    const timer = this.#clock.setTimer(next.readyAt - this.#clock.now(), () => {
      this.#timer = undefined;
      this.#fire();
    });
    this.#timer = { at: next.readyAt, timer };
  }

  #disarm(): void {
    this.#timer?.timer.cancel();
    this.#timer = undefined;
  }

  /** Adds every scheduled key that is due, in order, and sets the timer for the rest. */
  #fire(): void {
    const now = this.#clock.now();
    for (let next = this.#schedule.peek(); next !== undefined && next.readyAt <= now; next = this.#schedule.peek()) {
      this.#schedule.pop();
      if (this.#delayed.get(next.item) !== next) continue;
      this.#delayed.delete(next.item);
      this.#onDue(next.item, next.priority);
    }
    this.#arm();
  }
}
