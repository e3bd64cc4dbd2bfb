/**
 * @module tracing/spans
 * OpenTelemetry tracing of reconciles and API requests, through `@opentelemetry/api` only: the SDK, the exporter and
 * the sampler are the application's choice (register a TracerProvider and a context manager, as `NodeSDK` does).
 *
 * Guarantees:
 * - No provider registered, no cost: `runtimeTracer()` answers `undefined` after one identity comparison, and callers
 *   skip every span, attribute and context object — the reconcile and request paths allocate nothing for tracing.
 * - Each reconcile is one root span `reconcile <controller>` (a new trace: a reconcile is level-triggered and may
 *   serve many changes) with the controller, the object key, the reconcile id, the time the request waited in the
 *   queue, and on its end the result (`success`, `requeue_after`, `error`) and the requeue delay. It is the active
 *   span while the reconciler runs, so the reconciler's own spans and its API requests nest under it.
 * - Each API request made while a sampled span is active is a CLIENT child span `<verb> <resource>` (or
 *   `<METHOD> <path>` for discovery and other non-resource paths) with the HTTP method, the Kubernetes verb,
 *   resource, namespace, the final status code and the number of resends — also when it outlives that span (an
 *   Event recorded by the reconcile and written in the background). Requests with no sampled span around them
 *   (informer lists and watches, Lease renewals) make no span.
 * - Long-lived work started from inside a reconcile (an informer for a kind first read there) runs detached from its
 *   trace (`detachedFromTrace`): its lists and relists never become children of that reconcile. So do leader election
 *   and the Manager's other background loops.
 * - A reconciler that throws anything — `null`, `undefined`, a string — ends its span with result `error`; ending a
 *   span never throws.
 * - Opt-in W3C trace context: a client that changes an object can stamp it with `traceContextAnnotations()`; a
 *   controller built with `traceContextFromAnnotations` links the reconcile span to that context (a link, not a
 *   parent: the reconcile may serve several changes). A malformed annotation is ignored.
 *
 * - `@opentelemetry/api` is loaded only once something has registered with it (a TracerProvider, a context manager:
 *   its global entry exists), or when a caller asks for trace context itself (`spanContextFromAnnotations`): an
 *   operator without tracing never loads its modules (51 of them, measured in docs/benchmarks.md). The API keeps its
 *   state in that global, so the copy loaded here and the application's are one.
 *
 * Caveats: watches are not traced (they last minutes; their events reach reconciles through the queue, whose wait is
 * recorded instead). The traceparent is parsed here, per the W3C Trace Context spec (version 00 and later
 * versions' leading fields), so the runtime depends on nothing beyond the API package.
 */
import { createRequire } from 'node:module';
import type * as OtelApi from '@opentelemetry/api';
import type { Context, Link, Span, SpanContext, Tracer, TracerProvider } from '@opentelemetry/api';
import { VERSION } from '../version.ts';

export type { Span };

/** The instrumentation scope of every span the runtime makes. */
export const TRACER_NAME = '@opkit/runtime';
/** The annotation holding a W3C `traceparent` (e.g. `00-<32 hex trace id>-<16 hex span id>-01`). */
export const TRACEPARENT_ANNOTATION = 'opkit.dev/traceparent';
/** The annotation holding the matching W3C `tracestate`, if any. */
export const TRACESTATE_ANNOTATION = 'opkit.dev/tracestate';

/** Span attribute names (OpenTelemetry semantic conventions where one exists, `opkit.*` otherwise). */
export const ATTR = {
  controller: 'opkit.controller',
  objectKey: 'opkit.object.key',
  objectName: 'opkit.object.name',
  namespace: 'k8s.namespace.name',
  reconcileId: 'opkit.reconcile.id',
  queueWaitMs: 'opkit.queue.wait_ms',
  result: 'opkit.reconcile.result',
  requeueAfterMs: 'opkit.reconcile.requeue_after_ms',
  errorType: 'error.type',
  method: 'http.request.method',
  statusCode: 'http.response.status_code',
  resendCount: 'http.request.resend_count',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  urlPath: 'url.path',
  verb: 'k8s.request.verb',
  resource: 'k8s.request.resource',
  group: 'k8s.request.group',
} as const;

/** Where `@opentelemetry/api` 1.x keeps its registrations (providers, context manager, propagator). */
const OTEL_GLOBAL = Symbol.for('opentelemetry.js.api.1');

let api: { readonly otel: typeof OtelApi; readonly noop: TracerProvider } | undefined;

/** The API, loaded now if need be. */
function loadApi(): NonNullable<typeof api> {
  if (api === undefined) {
    const otel = createRequire(import.meta.url)('@opentelemetry/api') as typeof OtelApi;
    // the API's own no-op provider: what the global proxy delegates to while no SDK is registered
    api = { otel, noop: new otel.ProxyTracerProvider().getDelegate() };
  }
  return api;
}

/** The API when anything has registered with it; `undefined` (and nothing loaded) while nothing has. */
function registered(): NonNullable<typeof api> | undefined {
  if (api !== undefined) return api;
  if ((globalThis as Record<symbol, unknown>)[OTEL_GLOBAL] === undefined) return undefined;
  try {
    return loadApi();
  } catch {
    // registered by a copy this process cannot resolve from here (a bundle without node_modules): trace nothing
    return undefined;
  }
}

interface Delegating {
  getDelegate(): TracerProvider;
}

let cached: { readonly delegate: TracerProvider; readonly tracer: Tracer } | undefined;

/** The runtime's tracer, or `undefined` while no TracerProvider is registered (then trace nothing). */
export function runtimeTracer(): Tracer | undefined {
  const a = registered();
  if (a === undefined) return undefined;
  const global: TracerProvider & Partial<Delegating> = a.otel.trace.getTracerProvider();
  const delegate = typeof global.getDelegate === 'function' ? global.getDelegate() : global;
  if (delegate === a.noop) return undefined;
  if (cached?.delegate !== delegate) cached = { delegate, tracer: delegate.getTracer(TRACER_NAME, VERSION) };
  return cached.tracer;
}

/** What a reconcile span needs to know about its request. */
export interface ReconcileSpanInput {
  readonly controller: string;
  readonly key: string;
  readonly namespace: string | undefined;
  readonly name: string;
  readonly reconcileID: string;
  /** How long the request waited in the work queue. */
  readonly queueWaitMs: number | undefined;
  /** The annotations of the object, when the controller links spans to their trace context (opt-in). */
  readonly annotations?: Readonly<Record<string, string>> | undefined;
}

/** Starts the root span of one reconcile with `tracer` (from `runtimeTracer()`: call this only when tracing is on). */
export function startReconcileSpan(tracer: Tracer, input: ReconcileSpanInput): Span {
  const linked = input.annotations ? spanContextFromAnnotations(input.annotations) : undefined;
  const links: Link[] = linked
    ? [{ context: linked, attributes: { 'opkit.link.source': TRACEPARENT_ANNOTATION } }]
    : [];
  const { otel } = loadApi();
  return tracer.startSpan(
    `reconcile ${input.controller}`,
    {
      kind: otel.SpanKind.INTERNAL,
      root: true,
      links,
      attributes: {
        [ATTR.controller]: input.controller,
        [ATTR.objectKey]: input.key,
        [ATTR.objectName]: input.name,
        ...(input.namespace ? { [ATTR.namespace]: input.namespace } : {}),
        [ATTR.reconcileId]: input.reconcileID,
        ...(input.queueWaitMs !== undefined ? { [ATTR.queueWaitMs]: input.queueWaitMs } : {}),
      },
    },
    otel.ROOT_CONTEXT,
  );
}

/** Runs `fn` with `span` as the active span (so spans started inside nest under it). */
export function withActiveSpan<A extends unknown[], R>(
  span: Span,
  fn: (...args: A) => R,
  thisArg: unknown,
  ...args: A
): R {
  const { otel } = loadApi();
  return otel.context.with(otel.trace.setSpan(otel.ROOT_CONTEXT, span), fn, thisArg, ...args);
}

/**
 * Runs `fn` outside any trace (under the root context), for work that outlives its caller: an informer started by the
 * first read of a kind inside a reconcile, leader election, background loops. Their requests then make no span,
 * instead of nesting under whichever span happened to be active when they started.
 */
export function detachedFromTrace<R>(fn: () => R): R {
  const a = registered();
  // nothing registered: no context manager, so no context to leave
  return a === undefined ? fn() : a.otel.context.with(a.otel.ROOT_CONTEXT, fn);
}

/** How a reconcile ended: a result (`requeueAfterMs` when requeued), or a throw of any value (`undefined` too). */
export type ReconcileOutcome =
  | { readonly failed?: false; readonly requeueAfterMs?: number | undefined }
  | { readonly failed: true; readonly error: unknown };

/** Ends a reconcile span with its outcome. Never throws, whatever the reconciler threw. */
export function endReconcileSpan(span: Span, outcome: ReconcileOutcome): void {
  if (outcome.failed) {
    span.setAttribute(ATTR.result, 'error');
    failSpan(span, outcome.error);
  } else if (outcome.requeueAfterMs !== undefined && outcome.requeueAfterMs > 0) {
    span.setAttribute(ATTR.result, 'requeue_after');
    span.setAttribute(ATTR.requeueAfterMs, outcome.requeueAfterMs);
  } else {
    span.setAttribute(ATTR.result, 'success');
  }
  span.end();
}

/** The Kubernetes view of a request path, as the apiserver's RequestInfo resolves it. */
export interface RequestInfo {
  /** get, list, create, update, patch, delete, deletecollection — or the lower-case method for non-resource paths. */
  readonly verb: string;
  /** `pods`, `appservices/status`; absent for non-resource paths (discovery, /version). */
  readonly resource?: string;
  readonly group?: string;
  readonly namespace?: string;
  readonly name?: string;
}

/** Namespace subresources that are not resources of their own (`namespaces/<name>/status`). */
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

/** Resolves `method` + `path` (no query) into the Kubernetes verb, resource, group, namespace and name. */
export function requestInfo(method: string, path: string): RequestInfo {
  const parts = path.split('/').filter((p) => p.length > 0);
  const lower = method.toLowerCase();
  let rest: string[];
  let group: string;
  if (parts[0] === 'api' && parts.length >= 2) {
    group = '';
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    group = parts[1] ?? '';
    rest = parts.slice(3);
  } else {
    return { verb: lower };
  }
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length > 1) {
    namespace = rest[1];
    if (rest.length > 2 && !NAMESPACE_SUBRESOURCES.has(rest[2] ?? '')) rest = rest.slice(2);
  }
  const [resource, name, subresource] = rest;
  if (resource === undefined) return { verb: lower };
  const verbs: Record<string, string> = {
    get: name ? 'get' : 'list',
    post: 'create',
    put: 'update',
    patch: 'patch',
    delete: name ? 'delete' : 'deletecollection',
  };
  return {
    verb: verbs[lower] ?? lower,
    resource: subresource ? `${resource}/${subresource}` : resource,
    group,
    ...(namespace !== undefined ? { namespace } : {}),
    ...(name !== undefined ? { name } : {}),
  };
}

/**
 * Starts the CLIENT span of one API request when a sampled span is active (the reconcile's, or the caller's own),
 * even if that span has ended meanwhile; `undefined` otherwise.
 */
export function startRequestSpan(method: string, path: string, server: URL): Span | undefined {
  const a = registered();
  if (a === undefined) return undefined;
  const { otel } = a;
  const active = otel.context.active();
  const parent = otel.trace.getSpan(active);
  // a sampled parent, even one that has ended (an Event written in the background after its reconcile returned)
  if (parent === undefined || (parent.spanContext().traceFlags & otel.TraceFlags.SAMPLED) === 0) return undefined;
  const tracer = runtimeTracer();
  if (!tracer) return undefined;
  const info = requestInfo(method, path);
  const port = server.port !== '' ? Number(server.port) : server.protocol === 'http:' ? 80 : 443;
  return tracer.startSpan(
    info.resource ? `${info.verb} ${info.resource}` : `${method} ${path}`,
    {
      kind: otel.SpanKind.CLIENT,
      attributes: {
        [ATTR.method]: method,
        [ATTR.verb]: info.verb,
        ...(info.resource ? { [ATTR.resource]: info.resource, [ATTR.group]: info.group ?? '' } : {}),
        ...(info.namespace ? { [ATTR.namespace]: info.namespace } : {}),
        [ATTR.serverAddress]: server.hostname,
        [ATTR.serverPort]: port,
        [ATTR.urlPath]: path,
      },
    },
    active,
  );
}

/** Ends a request span; `{ failed: true, error }` (an ApiError or anything thrown) marks it failed. */
export function endRequestSpan(span: Span, outcome?: { readonly failed: true; readonly error: unknown }): void {
  if (outcome?.failed) {
    const status = field(outcome.error, 'status');
    if (typeof status === 'number' && status > 0) span.setAttribute(ATTR.statusCode, status);
    failSpan(span, outcome.error);
  }
  span.end();
}

/** A property of a thrown value, which may be anything (`null`, a string, an object without prototype). */
function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

/** A thrown value as text, even one `String()` refuses (an object without a prototype). */
function describe(value: unknown): string {
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

function failSpan(span: Span, error: unknown): void {
  const code = field(error, 'code');
  const message = error instanceof Error ? error.message : describe(error);
  span.setAttribute(ATTR.errorType, typeof code === 'string' ? code : error instanceof Error ? error.name : 'unknown');
  span.setStatus({ code: loadApi().otel.SpanStatusCode.ERROR, message });
  if (error instanceof Error) span.recordException(error);
}

/** The `traceparent` (and `tracestate`) annotations for the span context active now (or `ctx`'s); `{}` if none. */
export function traceContextAnnotations(ctx?: Context): Record<string, string> {
  // nothing registered and no context given: no span can be active
  const a = ctx === undefined ? registered() : loadApi();
  if (a === undefined) return {};
  const { otel } = a;
  const sc = otel.trace.getSpanContext(ctx ?? otel.context.active());
  if (!sc || !otel.isValidTraceId(sc.traceId) || !otel.isValidSpanId(sc.spanId)) return {};
  const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, '0');
  const state = sc.traceState?.serialize();
  return {
    [TRACEPARENT_ANNOTATION]: `00-${sc.traceId}-${sc.spanId}-${flags}`,
    ...(state ? { [TRACESTATE_ANNOTATION]: state } : {}),
  };
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The remote span context in an object's trace-context annotations, or `undefined` if absent or malformed. */
export function spanContextFromAnnotations(annotations: Readonly<Record<string, string>>): SpanContext | undefined {
  const value = annotations[TRACEPARENT_ANNOTATION];
  if (value === undefined) return undefined;
  const m = TRACEPARENT.exec(value.trim());
  if (!m) return undefined;
  const [, version = '', traceId = '', spanId = '', flags = '', extra] = m;
  // version ff is invalid; version 00 has exactly four fields; later versions may append fields
  if (version === 'ff' || (version === '00' && extra !== undefined)) return undefined;
  const { otel } = loadApi();
  if (!otel.isValidTraceId(traceId) || !otel.isValidSpanId(spanId)) return undefined;
  const state = annotations[TRACESTATE_ANNOTATION];
  return {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & 0x01,
    isRemote: true,
    ...(state ? { traceState: otel.createTraceState(state) } : {}),
  };
}
