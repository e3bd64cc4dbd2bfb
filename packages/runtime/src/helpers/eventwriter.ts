/**
 * @module helpers/eventwriter
 * Writing one series of Events to the API, for the EventRecorder (helpers/events): which API to write
 * (events.k8s.io/v1 when served, else core/v1), the Event's body in each, and the create-or-patch of its count.
 * Internal to the recorder.
 *
 * Guarantees:
 * - Discovery runs once per writer while it succeeds: a NotFound means core/v1; any other failure assumes
 *   events.k8s.io/v1 for this write and asks again next time.
 * - `write` brings the server's Event up to the series' count: a patch of `series` (events.k8s.io) or of `count` and
 *   `lastTimestamp` (core/v1) once the Event exists, a create (named `<regarding>.<16 hex digits>`) otherwise or when
 *   the Event expired meanwhile (the patch's NotFound). `written` moves only when a write succeeded.
 * - `failed` logs a failed write at debug, except the first refusal for lack of RBAC, a warning naming the rule.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { type Event, Events, type EventsV1Event, EventsV1Events } from '../client/builtins.ts';
import { isApiError } from '../client/errors.ts';
import type { Logger } from '../logger.ts';
import type { EventClient, EventObjectReference, EventType } from './events.ts';

/** The API an Event is written to. */
export type EventApi = 'events.k8s.io/v1' | 'v1';

/** What one Event says, and how far the server's copy of it is written. */
export interface WrittenSeries {
  readonly regarding: EventObjectReference;
  readonly related: EventObjectReference | undefined;
  readonly type: EventType;
  readonly reason: string;
  readonly action: string;
  readonly note: string;
  readonly first: number;
  last: number;
  /** Occurrences recorded. */
  count: number;
  /** Occurrences the written Event reports. */
  written: number;
  /** The written Event, once created. */
  ref: { readonly api: EventApi; readonly namespace: string; readonly name: string } | undefined;
}

/** Who writes: the client, the reporting controller and instance, and where failures are logged. */
export interface EventWriterOptions {
  /** Where Events are written. */
  readonly client: EventClient;
  /** The reporting controller. */
  readonly component: string;
  /** The reporting instance. */
  readonly instance: string;
  /** Where failures are logged. */
  readonly log: Logger;
}

/** Writes series of Events to the API the apiserver serves. */
export class EventWriter {
  readonly #o: EventWriterOptions;
  #api: Promise<EventApi> | undefined;
  /** The API discovery settled on, once it has. */
  #apiNow: EventApi | undefined;
  #warnedForbidden = false;

  constructor(options: EventWriterOptions) {
    this.#o = options;
  }

  /** Brings the server's Event up to the series' count: creates it, or patches its count. */
  async write(s: WrittenSeries, signal: AbortSignal): Promise<void> {
    const count = s.count;
    if (count === s.written) return;
    const last = s.last;
    if (s.ref) {
      try {
        if (s.ref.api === 'v1') {
          await this.#o.client.patch(Events, s.ref, { count, lastTimestamp: seconds(last) }, { signal });
        } else {
          await this.#o.client.patch(
            EventsV1Events,
            s.ref,
            { series: { count, lastObservedTime: microTime(last) } },
            { signal },
          );
        }
        s.written = count;
        return;
      } catch (err) {
        if (!isApiError(err, 'NotFound')) throw err; // the Event expired: create it again
      }
    }
    const api = await this.#servedApi(signal);
    const namespace = s.regarding.namespace ?? 'default';
    const name = `${s.regarding.name}.${randomBytes(8).toString('hex')}`;
    const created =
      api === 'v1'
        ? await this.#o.client.create(Events, this.#coreEvent(s, namespace, name, count, last), { signal })
        : await this.#o.client.create(EventsV1Events, this.#eventsV1Event(s, namespace, name, count, last), {
            signal,
          });
    s.ref = { api, namespace: created.metadata.namespace ?? namespace, name: created.metadata.name ?? name };
    s.written = count;
  }

  /** Logs a failed write: at debug, except the first refusal for lack of RBAC, which is a warning naming the rule. */
  failed(err: unknown, s: WrittenSeries): void {
    const message = err instanceof Error ? err.message : String(err);
    if (isApiError(err, 'Forbidden') && !this.#warnedForbidden) {
      this.#warnedForbidden = true;
      const group = s.ref?.api === 'v1' || this.#apiNow === 'v1' ? 'core ("")' : 'events.k8s.io';
      this.#o.log.warn(
        { err: message, namespace: s.regarding.namespace ?? 'default' },
        `events are not being written: the operator's RBAC lacks create and patch on ${group} events — ` +
          'regenerate and apply its RBAC (opkit generate, then opkit deploy); further refusals are logged at debug',
      );
      return;
    }
    this.#o.log.debug({ err: message, reason: s.reason }, 'could not write an event');
  }

  /** events.k8s.io/v1 when served (asked once); core/v1 when the group version is not served. */
  #servedApi(signal: AbortSignal): Promise<EventApi> {
    if (!this.#api) {
      const asked = this.#o.client.serverResources('events.k8s.io/v1', { signal }).then(
        (resources): EventApi => (resources.some((r) => r.name === 'events') ? 'events.k8s.io/v1' : 'v1'),
        (err: unknown): EventApi => {
          if (isApiError(err, 'NotFound')) return 'v1';
          this.#api = undefined; // ask again next time
          this.#o.log.debug({ err: (err as Error).message }, 'events.k8s.io discovery failed: assuming it is served');
          return 'events.k8s.io/v1';
        },
      );
      this.#api = asked;
      void asked.then((api) => {
        this.#apiNow = api;
        if (api === 'v1') this.#o.log.info({}, 'events.k8s.io/v1 is not served: writing core/v1 Events');
      });
    }
    return this.#api;
  }

  #eventsV1Event(s: WrittenSeries, namespace: string, name: string, count: number, last: number): EventsV1Event {
    return {
      metadata: { namespace, name },
      eventTime: microTime(s.first),
      ...(count > 1 ? { series: { count, lastObservedTime: microTime(last) } } : {}),
      reportingController: this.#o.component,
      reportingInstance: this.#o.instance,
      action: s.action,
      reason: s.reason,
      regarding: { ...s.regarding },
      ...(s.related ? { related: { ...s.related } } : {}),
      note: s.note,
      type: s.type,
    };
  }

  #coreEvent(s: WrittenSeries, namespace: string, name: string, count: number, last: number): Event {
    return {
      metadata: { namespace, name },
      involvedObject: { ...s.regarding },
      ...(s.related ? { related: { ...s.related } } : {}),
      type: s.type,
      reason: s.reason,
      action: s.action,
      message: s.note,
      source: { component: this.#o.component, host: hostname() },
      reportingComponent: this.#o.component,
      reportingInstance: this.#o.instance,
      firstTimestamp: seconds(s.first),
      lastTimestamp: seconds(last),
      count,
    };
  }
}

/** RFC 3339 with microseconds (a MicroTime), as events.k8s.io requires. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, '000Z');
}

/** RFC 3339 in whole seconds (a Time), as core/v1 Events' timestamps are. */
function seconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
