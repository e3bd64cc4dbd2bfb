/**
 * @module controller/expectations
 * Read-your-own-writes for a controller's children (the ReplicaSet controller's "expectations", by UID). For each
 * request key it records the objects the controller just created or deleted; `satisfied(key)` is true once the cache
 * shows every created object (same UID present) and no longer shows every deleted one (UID gone or replaced).
 *
 * Guarantees: judged against the cache's current state, not against events, so a change the cache saw before the
 * expectation was recorded still counts and nothing can be missed. An expectation older than the timeout (default
 * 60 s) is dropped with a warning, so a lost event can delay a controller but never wedge it.
 */

import type { Store } from '../cache/store.ts';
import { type KubeObject, keyOf } from '../client/resource.ts';
import type { Logger } from '../logger.ts';

interface Pending {
  readonly kind: 'create' | 'delete';
  readonly store: Store<KubeObject>;
  readonly objectKey: string;
  readonly uid: string;
  readonly at: number;
}

export class Expectations {
  readonly #pending = new Map<string, Pending[]>();
  readonly #timeoutMs: number;
  readonly #now: () => number;
  readonly #log: Logger;

  constructor(options: { timeoutMs?: number; now?: () => number; log: Logger }) {
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#now = options.now ?? Date.now;
    this.#log = options.log;
  }

  expectCreated(key: string, store: Store<KubeObject>, obj: KubeObject): void {
    this.#add(key, 'create', store, obj);
  }

  expectDeleted(key: string, store: Store<KubeObject>, obj: KubeObject): void {
    this.#add(key, 'delete', store, obj);
  }

  /** True when the cache reflects every recorded change of `key` (satisfied entries are dropped). */
  satisfied(key: string): boolean {
    const list = this.#pending.get(key);
    if (!list) return true;
    const now = this.#now();
    const left = list.filter((p) => {
      const current = p.store.get(p.objectKey);
      const observed = p.kind === 'create' ? current?.metadata.uid === p.uid : current?.metadata.uid !== p.uid;
      if (observed) return false;
      if (now - p.at > this.#timeoutMs) {
        this.#log.warn(
          { request: key, object: p.objectKey, expected: p.kind, afterMs: now - p.at },
          'the cache did not observe an expected change in time: going on without it',
        );
        return false;
      }
      return true;
    });
    if (left.length === 0) this.#pending.delete(key);
    else this.#pending.set(key, left);
    return left.length === 0;
  }

  /** Milliseconds until the oldest pending expectation of `key` times out (0 when none). */
  remainingMs(key: string): number {
    const list = this.#pending.get(key);
    if (!list || list.length === 0) return 0;
    return Math.max(0, Math.min(...list.map((p) => p.at + this.#timeoutMs - this.#now())));
  }

  pending(key: string): number {
    return this.#pending.get(key)?.length ?? 0;
  }

  /** Forget everything about `key` (e.g. the object is gone). */
  clear(key: string): void {
    this.#pending.delete(key);
  }

  #add(key: string, kind: Pending['kind'], store: Store<KubeObject>, obj: KubeObject): void {
    const uid = obj.metadata.uid;
    if (!uid) throw new TypeError('an expectation needs the object as the API returned it (with metadata.uid)');
    const list = this.#pending.get(key) ?? [];
    list.push({ kind, store, objectKey: keyOf(obj), uid, at: this.#now() });
    this.#pending.set(key, list);
  }
}
