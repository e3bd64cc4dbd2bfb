// scaffolded by opkit — this file is yours to edit
/**
 * @module controllers/planted/cross-shard
 * A reconcile that writes to objects other than its own: each Widget's reconcile counts the Widgets of its namespace
 * and writes the count, as the annotation `planted.example.com/peers`, on every one of them. Run with leader election
 * it is harmless (one replica writes); run sharded, the replica that holds one Widget's shard writes to Widgets of
 * shards that others hold, so two replicas act on one object at once. Caught by `shard-owner-only` in a sharded
 * fault-free run with Widgets spread over the replicas (test/planted.test.ts). The fixed one writes the count on its
 * own Widget only.
 */
import { done } from '@opkit/runtime';
import { Widgets } from '../../api/v1/widget.ts';
import type { PlantedBug, WidgetReconcile } from './variant.ts';

export const PEERS_ANNOTATION = 'planted.example.com/peers';

const reconcile =
  (everyone: boolean): WidgetReconcile =>
  async (w, ctx) => {
    const namespace = w.metadata.namespace ?? '';
    const { items } = await ctx.rawClient.list(Widgets, { namespace });
    const peers = String(items.length);
    for (const other of everyone ? items : [w]) {
      if (other.metadata.annotations?.[PEERS_ANNOTATION] === peers) continue;
      const ref = { namespace, name: other.metadata.name ?? '' };
      await ctx.rawClient.patch(Widgets, ref, { metadata: { annotations: { [PEERS_ANNOTATION]: peers } } });
    }
    return done();
  };

export const crossShard: PlantedBug = {
  summary: 'a reconcile that writes to objects of other shards (a sharded operator)',
  buggy: { reconcile: reconcile(true) },
  fixed: { reconcile: reconcile(false) },
};
