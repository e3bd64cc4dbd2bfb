/**
 * @module manager/defaults
 * The defaults a manager gives each controller it builds: its controller settings (concurrency, cache-sync timeout,
 * the drain, the reconcile timeout, trace context), its field manager, its Event recorder, and what lets the
 * controller act: the sharding gate, or the replica's fence (leader election).
 *
 * And what a manager gives its fleet (`fleetDeps`): its own cluster as the hub, its logger and metrics, its client's
 * name and field validation and its cache options for the members', its `checkServed`; with sharding, the fleet's
 * ring (multicluster/spread.ts) and a hub cache of the fleet's own, which caches the hub's objects whole.
 *
 * And the webhook server a manager makes on first use (`managerWebhookServer`): its settings, certificates from
 * `certificates` or the files in `certDir` (default `/tmp/k8s-webhook-server/serving-certs`, as controller-runtime's).
 *
 * Guarantees: with a fence, the controller's Events are written through a recorder whose writes ask the same fence; a
 * controller that runs on every replica (`needLeaderElection: false`, `everyReplica`) gets an unfenced recorder.
 */

import { Cache } from '../cache/cache.ts';
import type { Client } from '../client/client.ts';
import type { BuilderOptions } from '../controller/builder.ts';
import type { RequestGate } from '../controller/options.ts';
import type { EventRecorder } from '../helpers/events.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import type { FleetDeps } from '../multicluster/fleet.ts';
import { FLEET_RING, FleetSpread, type SpreadFleet } from '../multicluster/spread.ts';
import type { Registry } from '../prometheus.ts';
import type { ShardCoordinator, ShardHost } from '../sharding/coordinator.ts';
import { FileCertificates } from '../tls/sources.ts';
import { WebhookServer } from '../webhook/server.ts';
import { instanceName } from './client.ts';
import type { ManagerOptions } from './options.ts';
import { checkServed } from './served.ts';

/** What the defaults are made of: the manager's settings and the recorders of the cluster the controller writes in. */
export interface DefaultsInput {
  readonly name: string;
  readonly settings: ManagerOptions['controllers'];
  readonly drainMs: number;
  /** The replica's fence, when leader election (not sharding) decides whether it acts. */
  readonly fence: (() => void) | undefined;
  readonly gate: RequestGate | undefined;
  /** The recorder whose writes ask `fence`, and the plain one. */
  readonly events: { readonly fenced: (fence: () => void) => EventRecorder; readonly plain: () => EventRecorder };
}

/** The builder defaults, and the override for a controller on every replica (see the module comment). */
export function controllerDefaults(i: DefaultsInput): { defaults: BuilderOptions; everyReplica?: BuilderOptions } {
  const { maxConcurrentReconciles, cacheSyncTimeoutMs, reconcileTimeoutMs, traceContextFromAnnotations } =
    i.settings ?? {};
  const defaults: BuilderOptions = {
    // a value of 0 (or false) is the controller's own default
    ...(maxConcurrentReconciles ? { maxConcurrentReconciles } : {}),
    ...(cacheSyncTimeoutMs ? { cacheSyncTimeoutMs } : {}),
    gracefulShutdownTimeoutMs: i.drainMs,
    ...(reconcileTimeoutMs ? { reconcileTimeoutMs } : {}),
    ...(traceContextFromAnnotations ? { traceContextFromAnnotations: true } : {}),
    events: i.fence ? i.events.fenced(i.fence) : i.events.plain(),
    fieldManager: i.name,
    ...(i.gate ? { gate: i.gate, needLeaderElection: false } : i.fence ? { fence: i.fence } : {}),
  };
  // a controller on every replica has no fence (controller.ts), so its Events are not fenced either
  return i.fence && !i.gate ? { defaults, everyReplica: { events: i.events.plain() } } : { defaults };
}

/** The webhook server of a manager (see the module comment). */
export function managerWebhookServer(
  settings: ManagerOptions['webhook'],
  log: Logger,
  registry: Registry,
): WebhookServer {
  const { certDir, ...o } = settings ?? {};
  const certificates =
    o.certificates ??
    new FileCertificates({ dir: certDir ?? '/tmp/k8s-webhook-server/serving-certs', purpose: 'webhook' });
  return new WebhookServer({ log: log.child({ component: 'webhook' }), registry, ...o, certificates });
}

/** What a manager gives its fleet (see the module comment). */
export function fleetDeps(
  m: {
    readonly name: string;
    readonly log: Logger;
    readonly client: Client;
    readonly cache: Cache;
    readonly metrics: Metrics;
  },
  o: ManagerOptions,
  defaults: FleetDeps['defaults'],
  at: {
    /** The manager's drain time (its `gracefulShutdownTimeoutMs`). */
    readonly drainMs: number;
    readonly sharding: { ring(suffix: string, host: ShardHost): ShardCoordinator } | undefined;
  },
): FleetDeps {
  const { sharding } = at;
  // spread, the members read the hub whole: the manager's cache holds only this replica's shards of what it partitions
  const hub = sharding
    ? { client: m.client, cache: new Cache({ ...o.cache, client: m.client, log: m.log }), own: true }
    : { client: m.client, cache: m.cache };
  return {
    hub,
    ...(sharding ? { spread: (f: SpreadFleet) => new FleetSpread((host) => sharding.ring(FLEET_RING, host), f) } : {}),
    ...{ log: m.log, registry: m.metrics.registry, cache: o.cache ?? {}, defaults, served: checkServed },
    drainMs: at.drainMs,
    client: { name: `${m.name}; ${instanceName()}`, fieldValidation: o.fieldValidation ?? 'Strict' },
  };
}
