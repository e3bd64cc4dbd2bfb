/**
 * @module internal/hops
 * Where one change is along its way through an operator, published on `node:diagnostics_channel` so a profiler can
 * follow it from the watch event to the end of its reconcile without the runtime knowing about it:
 * - `opkit:cache:event`   a watch event decoded (`{ resource, key, type }`);
 * - `opkit:cache:stored`  that event applied to the store, its handlers run;
 * - `opkit:workqueue:add` a key made dirty in a queue (`{ queue, key }`; deduplicated adds are not published);
 * - `opkit:workqueue:get` a key handed to a worker;
 * - `opkit:workqueue:done` its processing ended (the reconcile and its writes are over).
 * Every message carries `at` (`performance.now()`). Guarantees: with no subscriber, a hop costs one boolean check and
 * builds no message.
 */
import { channel } from 'node:diagnostics_channel';

export interface Hop {
  readonly key: string;
  readonly at: number;
  readonly resource?: string;
  readonly type?: string;
  readonly queue?: string;
}

export const HOPS = {
  event: channel('opkit:cache:event'),
  stored: channel('opkit:cache:stored'),
  add: channel('opkit:workqueue:add'),
  get: channel('opkit:workqueue:get'),
  done: channel('opkit:workqueue:done'),
} as const;

export type HopName = keyof typeof HOPS;

/** Publishes one hop when someone listens; `message` is only called then. */
export function hop(name: HopName, message: () => Omit<Hop, 'at'>): void {
  const ch = HOPS[name];
  if (ch.hasSubscribers) ch.publish({ ...message(), at: performance.now() });
}
