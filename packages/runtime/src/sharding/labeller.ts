/**
 * @module sharding/labeller
 * Gives each new object of a sharded primary kind its bucket label (`opkit.dev/shard`): a metadata-only watch of the
 * objects without a valid one (`notin (0,…,31)`: few at any time, so it costs little memory), and a rate-limited work
 * queue whose workers label those in buckets this replica runs.
 *
 * Guarantees: at most `concurrency` label writes are in flight; a write that fails (429, a timeout, a Conflict) is
 * retried with per-object backoff, one that finds the object gone is dropped; an object in a bucket this replica does
 * not run is left to the replica that does (`rescan` queues everything again when a bucket starts here). Labels are
 * written with a merge patch of the label alone, so the write never conflicts with the object's other changes.
 */
import { Informer } from '../cache/informer.ts';
import type { Client } from '../client/client.ts';
import { isApiError } from '../client/errors.ts';
import { type Kind, type KubeObject, keyOf, metadataOnly, parseKey } from '../client/resource.ts';
import { messageOf } from '../errors.ts';
import { ALL_BUCKET_VALUES, SHARD_LABEL } from '../helpers/shardlabel.ts';
import type { Logger } from '../logger.ts';
import { WorkQueue } from '../workqueue/index.ts';

/** The selector of objects without a valid bucket label. */
export const UNLABELLED = `${SHARD_LABEL} notin (${ALL_BUCKET_VALUES.join(',')})`;

/** What a labeller is made with. */
export interface LabellerOptions {
  readonly client: Client;
  readonly kind: Kind;
  /** The namespaces to watch (undefined: all). */
  readonly namespaces: readonly string[] | undefined;
  readonly log: Logger;
  /** The bucket an object belongs in (from the hash of its key). */
  readonly bucketOf: (namespace: string | undefined, name: string) => number;
  /** Whether this replica runs the bucket now. */
  readonly runs: (bucket: number) => boolean;
  /** Label writes in flight at most (default 4). */
  readonly concurrency?: number;
}

/** Labels the new objects of one primary kind in the buckets this replica runs; see the module comment. */
export class Labeller {
  readonly #o: LabellerOptions;
  readonly #informer: Informer<KubeObject>;
  readonly #queue: WorkQueue<string>;

  constructor(options: LabellerOptions) {
    this.#o = options;
    const kind = metadataOnly(options.kind);
    this.#informer = new Informer<KubeObject>(options.client, kind, {
      labelSelector: UNLABELLED,
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

  /** Queues every object still without a label (a bucket started here). */
  rescan(): void {
    for (const key of this.#informer.store.keys()) this.#queue.add(key);
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
    const bucket = obj ? this.#o.bucketOf(ref.namespace, ref.name) : undefined;
    if (bucket === undefined || !this.#o.runs(bucket)) {
      this.#queue.forget(key);
      return;
    }
    try {
      const patch = { metadata: { labels: { [SHARD_LABEL]: String(bucket) } } };
      await this.#o.client.patch(metadataOnly(this.#o.kind), ref, patch, { signal });
      this.#queue.forget(key);
      this.#o.log.debug({ ...ref, bucket }, 'sharding: labelled');
    } catch (err) {
      if (isApiError(err, 'NotFound') || signal.aborted) {
        this.#queue.forget(key);
        return;
      }
      this.#o.log.warn({ ...ref, err: messageOf(err) }, 'sharding: could not label: retrying');
      this.#queue.addRateLimited(key);
    }
  }
}
