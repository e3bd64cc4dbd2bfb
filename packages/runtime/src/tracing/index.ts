/**
 * @module @opkit/runtime/tracing
 * What an operator or a traced client needs of opkit's OpenTelemetry spans: the tracer's name, the span attribute
 * names, and the opt-in trace-context annotations that link a change to the reconcile it causes. The spans themselves
 * are made by the runtime once a tracer provider is registered with `@opentelemetry/api`.
 */
export {
  ATTR as TRACE_ATTRIBUTES,
  spanContextFromAnnotations,
  TRACEPARENT_ANNOTATION,
  TRACER_NAME,
  TRACESTATE_ANNOTATION,
  traceContextAnnotations,
} from './spans.ts';
