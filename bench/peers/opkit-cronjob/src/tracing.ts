// scaffolded by opkit — this file is yours to edit
/**
 * OpenTelemetry tracing, off by default. With `--tracing` (or TRACING=true) the operator exports its spans — one per
 * reconcile, with a child per API request — over OTLP/HTTP (protobuf) to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
 * OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318), as service OTEL_SERVICE_NAME (default: the operator's
 * name), and reconciles link to the trace context a client wrote into an object's `opkit.dev/traceparent`
 * annotation. Off, none of the SDK is loaded. Swap the exporter or add a sampler here.
 */
/** The `--tracing` flag, for `settings({ flags: { ...TRACING_FLAGS } })`. */
export const TRACING_FLAGS = {
  tracing: {
    type: 'boolean',
    env: 'TRACING',
    default: false,
    help: 'export traces over OTLP (endpoint: OTEL_EXPORTER_OTLP_ENDPOINT)',
  },
} as const;

/**
 * When `on`, registers the SDK and returns the function that exports the spans still buffered and shuts the SDK
 * down: give it to `mgr.onStopped`, which calls it once the reconciles have drained and the Events were written, so
 * their spans are exported too. `undefined` when off.
 */
export async function startTracing(serviceName: string, on: boolean): Promise<(() => Promise<void>) | undefined> {
  if (!on) return undefined;
  const [
    { context, trace },
    { AsyncLocalStorageContextManager },
    sdk,
    { OTLPTraceExporter },
    { resourceFromAttributes },
  ] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/resources'),
  ]);
  const provider = new sdk.TracerProvider({
    resource: resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME ?? serviceName }),
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  return () => provider.shutdown(); // exports what is buffered
}
