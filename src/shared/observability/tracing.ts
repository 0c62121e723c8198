import type { Context as TraceContext, HrTime, Span, TextMapPropagator, Tracer } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import type { Config } from '../../config/index.js';

/**
 * What a span records of a router's choice (`engines/routing/router.ts` RoutingDecision has it
 * all).
 */
export interface TracedRouting {
  policy: string;
  scores: Record<string, unknown>;
  prefixBlocks: { matched: number; total: number };
}

/**
 * The spans of one request, passed along explicitly (on the Hono context and
 * on the billed call) rather than through a context manager: an
 * AsyncLocalStorage context manager's promise hooks would cost every request
 * about a millisecond. Times are `performance.now()` values.
 */
export interface RequestTrace {
  /** The W3C `traceparent` of the request's span: sent back to the client. */
  readonly traceparent: string;
  /**
   * The call leaves for an engine: records the admission span (`admittedFrom` to `at`), starts the
   * upstream span and returns the headers the engine gets (`traceparent`, and `tracestate` when the
   * client sent one), naming the upstream span as their parent.
   */
  startUpstream(admittedFrom: number, at: number, model: string): Record<string, string>;
  /**
   * The engine answered (its status and headers) at `at`: the upstream span ends, naming the
   * replica chosen and, when a router chose it, why.
   */
  upstreamAnswered(replicaId: string, servedModel: string, at: number, routing?: TracedRouting): void;
  /**
   * The upstream call failed (on every replica tried): the upstream span, if still open, ends as an
   * error.
   */
  upstreamFailed(error: unknown): void;
  /** A child span of the request that ran from `startedAt` to `endedAt`, recorded once it is over. */
  record(
    name: string,
    startedAt: number,
    endedAt: number,
    attributes?: Record<string, string | number | boolean>,
  ): void;
  /** The request was answered at `at` (a stream: it ended): its span ends. */
  end(outcome: { route: string; status: number; errorType: string; model: string }, at: number): void;
}

/** Starts requests' traces; one per gateway. */
export interface Tracing {
  /** The span of a request arriving, child of the client's `traceparent` when it sent a valid one. */
  begin(
    method: string,
    path: string,
    traceparent: string | undefined,
    tracestate: string | undefined,
    at: number,
  ): RequestTrace;
  /** Exports what is still buffered and stops. */
  shutdown(): Promise<void>;
}

/** Longest a gateway's close waits for its last spans to be exported. */
const SHUTDOWN_TIMEOUT_MS = 2_000;

export type TracingSettings = NonNullable<Config['observability']['tracing']>;

export interface TracingOptions {
  /** Spans go here instead of to OTLP, each as it ends (tests: the SDK's InMemorySpanExporter). */
  exporter?: SpanExporter;
}

/**
 * Starts the OpenTelemetry trace SDK (`@opentelemetry/sdk-trace`, exporting
 * with `@opentelemetry/exporter-trace-otlp-proto`, which reads the standard
 * OTEL_EXPORTER_OTLP_* variables). Called only when tracing is configured:
 * the SDK is imported here, so a gateway without tracing never loads it, and
 * no global tracer provider or context manager is installed either way.
 *
 * @example
 * const tracing = config.observability.tracing ? await startTracing(config.observability.tracing) : null;
 */
export async function startTracing(settings: TracingSettings, options: TracingOptions = {}): Promise<Tracing> {
  const [api, sdk, core, resources, semconv] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  const exporter =
    options.exporter ??
    new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter({ url: settings.url });
  // Batched for OTLP (one export every few seconds, off the request path); one by one for a test's
  // exporter.
  const processor = options.exporter
    ? new sdk.SimpleSpanProcessor({ exporter })
    : new sdk.BatchSpanProcessor({ exporter });
  const ratio = new sdk.TraceIdRatioBasedSampler(settings.samplerRatio);
  const roots = { always_on: new sdk.AlwaysOnSampler(), always_off: new sdk.AlwaysOffSampler(), traceidratio: ratio };
  const [parentBased, root] = settings.sampler.startsWith('parentbased_')
    ? [true, settings.sampler.slice('parentbased_'.length) as keyof typeof roots]
    : [false, settings.sampler as keyof typeof roots];
  const sampler = parentBased ? new sdk.ParentBasedSampler({ root: roots[root] }) : roots[root];
  const provider = new sdk.TracerProvider({
    resource: resources
      .defaultResource()
      .merge(resources.resourceFromAttributes({ [semconv.ATTR_SERVICE_NAME]: settings.serviceName })),
    sampler,
    spanProcessors: [processor],
  });
  const tracer = provider.getTracer('tollgate');
  const propagator = new core.W3CTraceContextPropagator();
  // Every span time is a performance.now() value turned into an HrTime on one clock; the SDK would
  // anchor each span to Date.now() (whole milliseconds) on its own, so spans of one request could
  // overlap.
  const deps: TraceDeps = { api, tracer, propagator, attr: semconv, time: (at) => core.hrTime(at) };
  return {
    begin(method, path, traceparent, tracestate, at) {
      const carrier: Record<string, string> = {};
      if (traceparent) carrier.traceparent = traceparent;
      if (tracestate) carrier.tracestate = tracestate;
      const parent = traceparent
        ? propagator.extract(api.ROOT_CONTEXT, carrier, api.defaultTextMapGetter)
        : api.ROOT_CONTEXT;
      const span = tracer.startSpan(
        method,
        {
          kind: api.SpanKind.SERVER,
          startTime: deps.time(at),
          attributes: { [semconv.ATTR_HTTP_REQUEST_METHOD]: method, [semconv.ATTR_URL_PATH]: path },
        },
        parent,
      );
      return new SpanTrace(deps, span, method);
    },
    async shutdown() {
      // Spans still buffered go out now; a collector that does not answer holds a shutdown 2 s at
      // most.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_TIMEOUT_MS)));
      await Promise.race([provider.shutdown().catch(() => {}), late]);
      clearTimeout(timer);
    },
  };
}

interface TraceDeps {
  api: typeof import('@opentelemetry/api');
  tracer: Tracer;
  propagator: TextMapPropagator;
  attr: typeof import('@opentelemetry/semantic-conventions');
  time(at: number): HrTime;
}

class SpanTrace implements RequestTrace {
  readonly traceparent: string;
  private readonly context: TraceContext;
  private upstream: Span | null = null;

  constructor(
    private readonly deps: TraceDeps,
    private readonly span: Span,
    private readonly method: string,
  ) {
    this.context = deps.api.trace.setSpan(deps.api.ROOT_CONTEXT, span);
    this.traceparent = this.headersFor(this.context).traceparent ?? '';
  }

  startUpstream(admittedFrom: number, at: number, model: string): Record<string, string> {
    this.record('tollgate.admission', admittedFrom, at);
    this.upstream = this.deps.tracer.startSpan(
      'tollgate.upstream',
      {
        kind: this.deps.api.SpanKind.CLIENT,
        startTime: this.deps.time(at),
        attributes: { 'gen_ai.request.model': model },
      },
      this.context,
    );
    return this.headersFor(this.deps.api.trace.setSpan(this.context, this.upstream));
  }

  upstreamAnswered(replicaId: string, servedModel: string, at: number, routing?: TracedRouting): void {
    this.upstream?.setAttributes({ 'tollgate.engine.replica': replicaId, 'tollgate.engine.served_model': servedModel });
    if (routing) {
      this.upstream?.setAttributes({
        'tollgate.routing.policy': routing.policy,
        'tollgate.routing.scores': JSON.stringify(routing.scores),
        'tollgate.routing.prefix_blocks_matched': routing.prefixBlocks.matched,
        'tollgate.routing.prefix_blocks': routing.prefixBlocks.total,
      });
    }
    this.upstream?.end(this.deps.time(at));
    this.upstream = null;
  }

  upstreamFailed(error: unknown): void {
    if (!this.upstream) return;
    // The error's code (upstream_error) or class name only: its message may name a host.
    const code = (error as { code?: unknown } | null)?.code;
    this.upstream.setAttribute(
      this.deps.attr.ATTR_ERROR_TYPE,
      typeof code === 'string' ? code : ((error as Error | null)?.name ?? 'error'),
    );
    this.upstream.setStatus({ code: this.deps.api.SpanStatusCode.ERROR });
    this.upstream.end(this.deps.time(performance.now()));
    this.upstream = null;
  }

  record(
    name: string,
    startedAt: number,
    endedAt: number,
    attributes?: Record<string, string | number | boolean>,
  ): void {
    this.deps.tracer
      .startSpan(name, { startTime: this.deps.time(startedAt), attributes }, this.context)
      .end(this.deps.time(endedAt));
  }

  end(outcome: { route: string; status: number; errorType: string; model: string }, at: number): void {
    const { attr, api } = this.deps;
    const span = this.span;
    // Named as HTTP server spans are: method and route (the route is known only once a handler
    // matched).
    span.updateName(`${this.method} ${outcome.route}`);
    span.setAttribute(attr.ATTR_HTTP_ROUTE, outcome.route);
    span.setAttribute(attr.ATTR_HTTP_RESPONSE_STATUS_CODE, outcome.status);
    if (outcome.model) span.setAttribute('gen_ai.request.model', outcome.model);
    if (outcome.errorType) span.setAttribute(attr.ATTR_ERROR_TYPE, outcome.errorType);
    // A server span is an error only when the server failed (5xx); a 4xx is the client's.
    if (outcome.status >= 500) span.setStatus({ code: api.SpanStatusCode.ERROR });
    span.end(this.deps.time(at));
  }

  private headersFor(context: TraceContext): Record<string, string> {
    const headers: Record<string, string> = {};
    this.deps.propagator.inject(context, headers, this.deps.api.defaultTextMapSetter);
    return headers;
  }
}
