/**
 * @module controller/expectations
 * Read-your-own-writes for a controller's writes (the ReplicaSet controller's "expectations", by UID, and
 * controller-runtime's read-your-writes for updates). For each request key it records the objects the controller just
 * created, deleted or wrote. As in Kubernetes' `controller_utils.go`, a create is observed once the cache has seen the
 * object at all (present now, or any event for its UID since), and a delete once the cache shows the object
 * terminating (`deletionTimestamp` set), gone, or replaced — a pod in its grace period does not hold its owner back. A
 * write (an update, a patch, an apply of an object that existed) is observed once the cache has seen the object at the
 * written `resourceVersion` or later (later: a decimal resourceVersion above it, as etcd's are and as
 * controller-runtime compares them; another form is only ever compared for equality), or gone, or replaced; so while
 * the cache holds the object, the next reconcile does not read an older version than the one it wrote.
 *
 * Guarantees: judged against the cache's current state and, through `observe()` (the controller feeds it every event
 * of its watched kinds), against what passed through the cache since the expectation was recorded — so a created
 * object that was deleted again before the next check still counts. An expectation older than the timeout (default
 * 60 s) is dropped with a warning, so a lost event can delay a controller but never wedge it.
 *
 * A create that got no answer (the connection broke, or the apiserver timed out, after the request may have been
 * stored) has no UID to expect. It is recorded as unsure; before the next reconcile of its key, `resolve` lists the
 * kind from the apiserver (as its informer would: same namespaces, selectors and partitions) and expects every object
 * the cache lacks that the create could have made (its name, or its controller). So the answer's loss cannot make the
 * controller create a second object, e.g. a pod past `replicas` for a `generateName` create. While the list fails, the
 * entry stays (up to the timeout) and the reconcile waits.
 */

import { type Cache, informerOf } from '../cache/cache.ts';
import type { Store } from '../cache/store.ts';
import { type Kind, type KubeObject, keyOf } from '../client/resource.ts';
import { UsageError } from '../errors.ts';
import { controllerOf } from '../helpers/ownerrefs.ts';
import type { Logger } from '../logger.ts';
import type { Expect } from './reconcile.ts';

/** Where an unsure create is looked for: the informer of its kind (`Informer` has both). */
export interface LiveSource {
  /** What the cache holds. */
  readonly store: Store<KubeObject>;
  /** What the apiserver holds now of what the cache would hold, in `namespace` (or all it watches). */
  listLive(namespace: string | undefined, signal?: AbortSignal): Promise<KubeObject[]>;
}

/** A create without an answer: the object as sent, looked for in `source`. */
interface Unsure {
  readonly source: LiveSource;
  readonly sent: KubeObject;
  readonly at: number;
}

interface Pending {
  readonly kind: 'create' | 'delete' | 'write';
  readonly store: Store<KubeObject>;
  readonly objectKey: string;
  readonly uid: string;
  /** A write's resourceVersion, as the API answered it. */
  readonly rv?: string | undefined;
  readonly at: number;
  /** Set by `observe()` when an event shows the change. */
  seen: boolean;
}

/**
 * Per request key, the children a controller just created or deleted and has not yet seen in its cache; see the module
 * comment.
 */
export class Expectations {
  readonly #pending = new Map<string, Pending[]>();
  /** Pending entries by the child's UID, for `observe()`. */
  readonly #byUid = new Map<string, Set<Pending>>();
  readonly #unsure = new Map<string, Unsure[]>();
  readonly #timeoutMs: number;
  readonly #now: () => number;
  readonly #log: Logger;

  constructor(options: { timeoutMs?: number; now?: () => number; log: Logger }) {
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#now = options.now ?? (() => performance.now());
    this.#log = options.log;
  }

  /**
   * Records that the reconcile of `key` created `obj` (as the API returned it, with its UID), to be seen in `store`.
   */
  expectCreated(key: string, store: Store<KubeObject>, obj: KubeObject): void {
    this.#add(key, 'create', store, obj);
  }

  /** Records that the reconcile of `key` deleted `obj`, to be seen terminating or gone in `store`. */
  expectDeleted(key: string, store: Store<KubeObject>, obj: KubeObject): void {
    this.#add(key, 'delete', store, obj);
  }

  /**
   * Records that the reconcile of `key` wrote `obj` (updated, patched or applied it; the object as the API answered,
   * with its resourceVersion), to be seen at that version or later in `store`.
   */
  expectWritten(key: string, store: Store<KubeObject>, obj: KubeObject): void {
    this.#add(key, 'write', store, obj);
  }

  /**
   * Records that the reconcile of `key` sent a create of `sent` that got no answer: it may or may not have happened.
   * `resolve(key)` finds out before the next reconcile (see the module comment).
   */
  expectMaybeCreated(key: string, source: LiveSource, sent: KubeObject): void {
    const list = this.#unsure.get(key) ?? [];
    list.push({ source, sent, at: this.#now() });
    this.#unsure.set(key, list);
  }

  /** Whether `key` has creates without an answer that `resolve` has to look for first. */
  unsure(key: string): boolean {
    return this.#unsure.has(key);
  }

  /**
   * Looks for the creates of `key` that got no answer: lists their kind from the apiserver and expects (as created)
   * each object the cache lacks that one of them could have made. Rejects as the list does (the entries stay, until
   * the timeout drops them with a warning).
   */
  async resolve(key: string, signal?: AbortSignal): Promise<void> {
    const list = this.#unsure.get(key) ?? [];
    while (list.length > 0) {
      const u = list[0] as Unsure;
      if (this.#now() - u.at > this.#timeoutMs) {
        this.#log.warn(
          { request: key, object: u.sent.metadata.name ?? u.sent.metadata.generateName, afterMs: this.#now() - u.at },
          'could not find out whether a create without an answer happened: going on without it',
        );
      } else {
        const live = await u.source.listLive(u.sent.metadata.namespace, signal);
        const known = new Set((this.#pending.get(key) ?? []).map((p) => p.uid));
        for (const obj of live) {
          const uid = obj.metadata.uid;
          if (!uid || known.has(uid) || !couldBe(u.sent, obj)) continue;
          if (u.source.store.get(keyOf(obj))?.metadata.uid === uid) continue; // the cache has it
          this.#add(key, 'create', u.source.store, obj);
          known.add(uid);
        }
      }
      list.shift();
    }
    this.#unsure.delete(key);
  }

  /**
   * An event for `obj` passed through the cache (`deleted`: it was a delete). Lowers the expectations it satisfies: a
   * create by any event for its UID, a delete by a delete event or a `deletionTimestamp`.
   */
  observe(obj: KubeObject, deleted: boolean): void {
    const uid = obj.metadata.uid;
    if (!uid) return;
    const entries = this.#byUid.get(uid);
    if (!entries) return;
    for (const p of entries) {
      if (p.kind === 'write') p.seen ||= deleted || atOrAfter(obj.metadata.resourceVersion, p.rv);
      else if (p.kind === 'create' || deleted || obj.metadata.deletionTimestamp) p.seen = true;
    }
  }

  /** True when the cache reflects every recorded change of `key` (satisfied entries are dropped). */
  satisfied(key: string): boolean {
    const list = this.#pending.get(key);
    if (!list) return true;
    const now = this.#now();
    const left = list.filter((p) => {
      const current = p.store.get(p.objectKey);
      const same = current?.metadata.uid === p.uid;
      const observed =
        p.seen ||
        (p.kind === 'create'
          ? same
          : p.kind === 'write'
            ? !same || atOrAfter(current?.metadata.resourceVersion, p.rv)
            : !same || current?.metadata.deletionTimestamp !== undefined);
      if (observed) {
        this.#unindex(p);
        return false;
      }
      if (now - p.at > this.#timeoutMs) {
        this.#log.warn(
          { request: key, object: p.objectKey, expected: p.kind, afterMs: now - p.at },
          'the cache did not observe an expected change in time: going on without it',
        );
        this.#unindex(p);
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

  /** How many recorded changes of `key` are not yet known to be observed (as of the last `satisfied` check). */
  pending(key: string): number {
    return this.#pending.get(key)?.length ?? 0;
  }

  /** Forget everything about `key` (e.g. the object is gone). */
  clear(key: string): void {
    this.#unsure.delete(key);
    for (const p of this.#pending.get(key) ?? []) this.#unindex(p);
    this.#pending.delete(key);
  }

  #add(key: string, kind: Pending['kind'], store: Store<KubeObject>, obj: KubeObject): void {
    const uid = obj.metadata.uid;
    if (!uid) {
      throw new UsageError(
        'InvalidArgument',
        'an expectation needs the object as the API returned it (with metadata.uid)',
      );
    }
    const list = this.#pending.get(key) ?? [];
    const rv = kind === 'write' ? obj.metadata.resourceVersion : undefined;
    const p: Pending = { kind, store, objectKey: keyOf(obj), uid, rv, at: this.#now(), seen: false };
    list.push(p);
    this.#pending.set(key, list);
    const byUid = this.#byUid.get(uid) ?? new Set<Pending>();
    byUid.add(p);
    this.#byUid.set(uid, byUid);
  }

  #unindex(p: Pending): void {
    const set = this.#byUid.get(p.uid);
    if (!set) return;
    set.delete(p);
    if (set.size === 0) this.#byUid.delete(p.uid);
  }
}

/** The `ctx.expect` of a reconcile of `key`: what it declares is recorded in `e`, against the cache's informers. */
export function expectFor(e: Expectations, key: string, cache: Cache): Expect {
  const informer = (r: Kind) => informerOf(cache, r) as unknown as LiveSource;
  return {
    created: (r, obj) => e.expectCreated(key, informer(r).store, obj),
    deleted: (r, obj) => e.expectDeleted(key, informer(r).store, obj),
    written: (r, obj) => e.expectWritten(key, informer(r).store, obj),
    maybeCreated: (r, sent) => e.expectMaybeCreated(key, informer(r), sent),
  };
}

/**
 * Whether the cache's `seen` resourceVersion is the `written` one or later: equal, or both decimal and above it (etcd's
 * are, and controller-runtime compares them so); a write without a resourceVersion is seen by any version.
 */
function atOrAfter(seen: string | undefined, written: string | undefined): boolean {
  if (written === undefined) return true;
  if (seen === undefined) return false;
  if (seen === written) return true;
  const decimal = /^[0-9]{1,30}$/;
  return decimal.test(seen) && decimal.test(written) && BigInt(seen) > BigInt(written);
}

/** Whether `obj` may be what a create of `sent` made: the same name, or (a generated name) the same controller. */
function couldBe(sent: KubeObject, obj: KubeObject): boolean {
  if (sent.metadata.name) return obj.metadata.name === sent.metadata.name;
  const owner = controllerOf(sent)?.uid;
  return owner !== undefined && controllerOf(obj)?.uid === owner;
}
