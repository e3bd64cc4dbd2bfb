/**
 * @module manager/recorders
 * A manager's Event recorders: one per component (`Manager.eventRecorder(component)`), and one per component whose
 * every write first asks a fence (the controllers', under leader election or sharding), each made once and flushed by
 * the manager's stop (`all`).
 */
import type { Client } from '../client/client.ts';
import { EventRecorder } from '../helpers/events.ts';
import type { Logger } from '../logger.ts';

/** The recorders of one manager; see the module comment. */
export class Recorders {
  readonly #client: Client;
  readonly #log: Logger;
  readonly #plain = new Map<string, EventRecorder>();
  readonly #fenced = new Map<string, EventRecorder>();

  constructor(client: Client, log: Logger) {
    this.#client = client;
    this.#log = log;
  }

  /** The recorder with `component` as the Events' source. */
  get(component: string): EventRecorder {
    return this.#made(this.#plain, component, this.#client);
  }

  /** The recorder with `component` as the source whose writes each first ask `fence` (made with the first fence). */
  fenced(component: string, fence: () => void): EventRecorder {
    return this.#made(this.#fenced, component, this.#client.withGuard(fence));
  }

  /** Every recorder made. */
  all(): EventRecorder[] {
    return [...this.#plain.values(), ...this.#fenced.values()];
  }

  #made(map: Map<string, EventRecorder>, component: string, client: Client): EventRecorder {
    let r = map.get(component);
    if (!r) {
      r = new EventRecorder({ client, component, log: this.#log.child({ component: 'events' }) });
      map.set(component, r);
    }
    return r;
  }
}
