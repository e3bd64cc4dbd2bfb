/**
 * @module sharding/labeller
 * Gives each object of a sharded kind without a valid shard label (`opkit.dev/shard`, by the scheme's values:
 * scheme.ts) its shard: a metadata-only watch of the objects without a valid one (`notin (0,…,31)`: few at any time,
 * so it costs little memory, but every child for a while after the ring switched filters), and a rate-limited work queue whose workers label those in shards this replica runs.
 * A primary object's shard is the hash of its shard key (new objects, `labels` filter only); a child's is its
 * controller owner's, as cached (a child created by hand without it, or whose label was removed by a full update).
 *
 * Guarantees: at most `concurrency` label writes are in flight; a write that fails (429, a timeout, a Conflict) is
 * retried with per-object backoff, one that finds the object gone is dropped; an object in a shard this replica does
 * not run is left to the replica that does (`rescan` queues everything again when a shard starts here), and each
 * write asks `guard` right before it is sent, so none goes out for a shard this replica stopped running. Labels are
 * written with a merge patch of the label alone, so the write never conflicts with the object's other changes. The
 * keys this labeller labelled in the last `recentMs` are known (`labelled`): their arrival in a shard is a creation,
 * not a move.
 */
import { Informer } from '../cache/informer.ts';
import type { Client } from '../client/client.ts';
import { isApiError } from '../client/errors.ts';
import {
  type Kind,
  type KubeObject,
  keyOf,
  metadataOnly,
  type ObjectRef,
  objectKey,
  parseKey,
  refOf,
} from '../client/resource.ts';
import { messageOf } from '../errors.ts';
import { SHARD_LABEL } from '../helpers/shardlabel.ts';
import type { Logger } from '../logger.ts';
import { WorkQueue } from '../workqueue/index.ts';
import type { ShardScheme } from './scheme.ts';

/** What a labeller is made with. */
export interface LabellerOptions {
  readonly client: Client;
  readonly kind: Kind;
  /** The scheme whose labels it writes (its valid values, and the value of each shard). */
  readonly scheme: ShardScheme;
  /** The namespaces to watch (undefined: all). */
  readonly namespaces: readonly string[] | undefined;
  readonly log: Logger;
  /** The shard an object belongs in, or undefined when it is none of this replica's business. */
  readonly shardOf: (obj: KubeObject) => number | undefined;
  /** Whether this replica runs the shard now. */
  readonly runs: (shard: number) => boolean;
  /** Asked right before each label write of `shard` is sent: throws to refuse it (the shard stopped here). */
  readonly guard: (shard: number) => void;
  /**
   * Runs before an object's label is written (for a primary object: its children labelled for the other filter are
   * labelled first, so its first reconcile finds them).
   */
  readonly before?: (obj: KubeObject, shard: number, signal: AbortSignal) => Promise<void>;
  /** How long a labelled key stays known as such (default 60 s). */
  readonly recentMs?: number;
  /** Label writes in flight at most (default 4). */
  readonly concurrency?: number;
}

/** Labels the unlabelled objects of one sharded kind in the shards this replica runs; see the module comment. */
export class Labeller {
  readonly #o: LabellerOptions;
  readonly #informer: Informer<KubeObject>;
  readonly #queue: WorkQueue<string>;
  /** Keys labelled here, and when (performance.now()). */
  readonly #labelled = new Map<string, number>();

  constructor(options: LabellerOptions) {
    this.#o = options;
    const kind = metadataOnly(options.kind);
    this.#informer = new Informer<KubeObject>(options.client, kind, {
      labelSelector: options.scheme.unlabelled,
      namespaces: options.namespaces,
      log: options.log,
    });
    this.#queue = new WorkQueue<string>({ name: `labeller-${kind.plural}` });
    const add = (obj: KubeObject) => this.#queue.add(keyOf(obj));
    this.#informer.addEventHandler({ add, update: (_old, obj) => add(obj) });
  }

  /** Runs until `signal` aborts. */
  start(signal: AbortSignal): void {
    this.#informer.start(signal);
    signal.addEventListener('abort', () => this.#queue.shutDown(), { once: true });
    for (let i = 0; i < (this.#o.concurrency ?? 4); i++) void this.#worker(signal);
  }

  /** Queues every object still without a label (a shard started here). */
  rescan(): void {
    for (const key of this.#informer.store.keys()) this.#queue.add(key);
  }

  /** The kind it labels. */
  get kind(): Kind {
    return this.#o.kind;
  }

  /**
   * Labels now, with shard `shard`'s label, the objects without a valid one that `which` picks (children of the other
   * filter whose owner's shard starts here, or of an owner about to get its first label), not asking `runs`; each
   * write asks `guard` first, at most `concurrency` at once. Answers the objects as written; one that fails is left to
   * the workers.
   */
  async labelNow(
    which: { readonly shard: number } | { readonly controller: string },
    shard: number,
    guard: () => void,
    signal: AbortSignal,
  ): Promise<KubeObject[]> {
    if (!(await this.#informer.waitForSync(signal))) return [];
    const store = this.#informer.store;
    const picked =
      'controller' in which
        ? store.byIndex('controller', which.controller)
        : [...store.values()].filter((o) => this.#o.shardOf(o) === which.shard);
    const client = this.#o.client.withGuard(guard);
    const written: KubeObject[] = [];
    const one = async (obj: KubeObject) => {
      try {
        written.push(await this.#write(client, refOf(obj), shard, signal));
      } catch (err) {
        if (!signal.aborted && !isApiError(err, 'NotFound') && !isApiError(err, 'Aborted'))
          this.#o.log.warn({ ...refOf(obj), err: messageOf(err) }, 'sharding: could not label');
      }
    };
    const queue = [...picked];
    const worker = async () => {
      for (let obj = queue.shift(); obj && !signal.aborted; obj = queue.shift()) await one(obj);
    };
    await Promise.all(Array.from({ length: this.#o.concurrency ?? 4 }, worker));
    return written;
  }

  /** Whether this labeller labelled `key` in the last `recentMs`. */
  labelled(key: string): boolean {
    const at = this.#labelled.get(key);
    return at !== undefined && performance.now() - at < (this.#o.recentMs ?? 60_000);
  }

  async #worker(signal: AbortSignal): Promise<void> {
    for (;;) {
      const key = await this.#queue.get();
      if (key === undefined) return;
      try {
        await this.#label(key, signal);
      } finally {
        this.#queue.done(key);
      }
    }
  }

  async #label(key: string, signal: AbortSignal): Promise<void> {
    const obj = this.#informer.store.get(key);
    const ref = parseKey(key);
    const shard = obj ? this.#o.shardOf(obj) : undefined;
    if (shard === undefined || !this.#o.runs(shard)) {
      this.#queue.forget(key);
      return;
    }
    try {
      await this.#o.before?.(obj as KubeObject, shard, signal);
      await this.#write(
        this.#o.client.withGuard(() => this.#o.guard(shard)),
        ref,
        shard,
        signal,
      );
      this.#queue.forget(key);
      this.#o.log.debug({ ...ref, shard }, 'sharding: labelled');
    } catch (err) {
      if (isApiError(err, 'NotFound') || signal.aborted) {
        this.#queue.forget(key);
        return;
      }
      if (isApiError(err, 'Aborted')) {
        // the shard stopped here meanwhile: its new holder labels it
        this.#queue.forget(key);
        return;
      }
      this.#o.log.warn({ ...ref, err: messageOf(err) }, 'sharding: could not label: retrying');
      this.#queue.addRateLimited(key);
    }
  }

  /** Writes shard `shard`'s label on `ref` (a merge patch of the label alone), remembered as labelled here first. */
  #write(client: Client, ref: ObjectRef, shard: number, signal: AbortSignal): Promise<KubeObject> {
    this.#remember(objectKey(ref)); // before the write: its watch event may come before its answer
    const patch = { metadata: { labels: { [SHARD_LABEL]: this.#o.scheme.labelValue(shard) } } };
    return client.patch(metadataOnly(this.#o.kind), ref, patch, { signal });
  }

  #remember(key: string): void {
    const now = performance.now();
    this.#labelled.set(key, now);
    const recent = this.#o.recentMs ?? 60_000;
    if (this.#labelled.size > 1024)
      for (const [k, at] of this.#labelled) if (now - at >= recent) this.#labelled.delete(k);
  }
}
