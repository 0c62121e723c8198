import type { Context, MiddlewareHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { GatewayEnv } from '../http/context.js';
import { GatewayError } from '../http/errors.js';
import { headerOf } from '../http/request.js';
import { Children } from './children.js';
import type { Metrics } from './metrics.js';
import type { RequestTrace, Tracing } from './tracing.js';

/** What the observer reads of a billed call (`requests/authorize.ts` BilledCall has it all). */
export interface ObservedCall {
  task: string;
  model: { id: string };
  caller: { orgId: string };
  /** When admission began (`performance.now()`). */
  startedAt: number;
  /**
   * When the call left for an engine, when its answer began, and when its last byte came (0: not
   * yet).
   */
  upstreamAt: number;
  answeredAt: number;
  upstreamDoneAt: number;
  trace: RequestTrace | undefined;
}

/** How a call was settled, as `requests/billed-call.ts` settle saw it. */
export interface ObservedSettlement {
  status: number;
  streamed: boolean;
  firstTokenAt?: number | null;
  /**
   * The usage and cost charged; null when the charge could not be made (an error, logged where it
   * happened).
   */
  billed: { usage: { promptTokens: number; completionTokens: number }; cost: bigint | null } | null;
}

/**
 * The route label of a billed call, for what is recorded when it settles rather than when it is
 * answered.
 */
const ROUTE_OF_TASK: Record<string, string> = { chat: '/v1/chat/completions', embedding: '/v1/embeddings' };
/** The `limit` label of a 429, by error code. */
const LIMIT_OF_CODE: Record<string, string> = {
  rate_limit_exceeded: 'requests',
  tokens_limit_exceeded: 'tokens',
  concurrency_limit_exceeded: 'concurrency',
  monthly_quota_exceeded: 'monthly_tokens',
};
/** The `cause` label of a 503, by error code. */
const CAUSE_OF_CODE: Record<string, string> = {
  billing_unavailable: 'database',
  limits_unavailable: 'limits_store',
  pricing_unavailable: 'no_price',
  upstream_error: 'engine',
};

/**
 * Records what operators watch, at a few fixed points of a request: when it
 * is answered (`middleware`), when a billed call settles (`settled`), and on
 * a cache lookup. Every series' child is found through a `Children` cache,
 * so a request allocates no label objects; with metrics and tracing both off
 * the middleware is not installed at all.
 *
 * @example
 * app.use(services.observer.middleware());
 */
export class Observer {
  private readonly requests;
  private readonly duration;
  private readonly ttft;
  private readonly overhead;
  private readonly tokens;
  private readonly charged;
  private readonly rateLimited;
  private readonly unavailable;
  private readonly cache;

  constructor(
    private readonly metrics: Metrics | null,
    private readonly tracing: Tracing | null,
    private readonly currency: string,
  ) {
    const m = metrics;
    this.requests = new Children((route: string, model: string, status: number, code: string) =>
      m?.requestCounts.child({ route, model, status: String(status), code }),
    );
    this.duration = new Children((route: string, model: string) => m?.requestDuration.labels(route, model));
    this.ttft = new Children((model: string) => m?.timeToFirstToken.labels(model));
    this.overhead = new Children((route: string) => m?.overhead.labels(route));
    // With the organization label off, the org argument is '' and ignored.
    this.tokens = new Children((model: string, org: string, kind: string) =>
      m?.tokenCounts.child(m.orgLabel ? { model, organization: org, kind } : { model, kind }),
    );
    this.charged = new Children((model: string, org: string) =>
      m?.chargedCounts.child(m.orgLabel ? { model, organization: org, currency } : { model, currency }),
    );
    this.rateLimited = new Children((limit: string) => m?.rateLimited.labels(limit));
    this.unavailable = new Children((cause: string) => m?.unavailable.labels(cause));
    this.cache = new Children((result: string) => m?.cacheLookups.labels(result));
  }

  /** Whether anything is recorded: false when metrics are off and tracing is not configured. */
  get active(): boolean {
    return this.metrics !== null || this.tracing !== null;
  }

  /**
   * Times and counts every request, and starts its trace: its span's
   * `traceparent` goes back to the client. A stream is recorded when it ends
   * (`settled`), not when its headers leave.
   */
  middleware(): MiddlewareHandler<GatewayEnv> {
    return async (c, next) => {
      const startedAt = performance.now();
      const trace = this.tracing?.begin(
        c.req.method,
        c.req.path,
        headerOf(c, 'traceparent'),
        headerOf(c, 'tracestate'),
        startedAt,
      );
      if (trace) {
        c.set('trace', trace);
        c.header('traceparent', trace.traceparent);
      }
      await next();
      if (c.get('streaming')) return;
      const status = c.res.status;
      const code = errorCodeOf(c, status);
      // A 404 no handler produced (notFound) has no route: one label for all of them.
      const route = status === 404 && !c.error ? 'unmatched' : c.req.routePath;
      const model = c.get('model') ?? '';
      const endedAt = performance.now();
      if (this.metrics) {
        this.requests.get(route, model, status, code)!.inc();
        this.duration.get(route, model)!.observe((endedAt - startedAt) / 1000);
        if (c.error && status >= 402) this.refused(status, code);
      }
      trace?.end({ route, status, errorType: code, model }, endedAt);
    };
  }

  /** A response-cache lookup of a key with the cache on. */
  cacheLookup(hit: boolean): void {
    if (this.metrics) this.cache.get(hit ? 'hit' : 'miss')!.inc();
  }

  /**
   * A billed call settled (its charge made, or failed): tokens and spend,
   * time to first token and the gateway's overhead; a stream's count and
   * duration (it has just ended); and the relay and charge spans.
   */
  settled(call: ObservedCall, outcome: ObservedSettlement, chargeStartedAt: number): void {
    if (!this.metrics && !call.trace) return;
    const now = performance.now();
    const route = ROUTE_OF_TASK[call.task] ?? call.task;
    const model = call.model.id;
    // A stream's last byte from the engine is when its relay ended, which is when it settles.
    const upstreamDoneAt = call.upstreamDoneAt || chargeStartedAt;
    const code = outcome.status === 200 ? '' : outcome.status === 499 ? 'client_closed' : 'upstream_error';
    if (this.metrics) {
      const billed = outcome.billed;
      if (billed) {
        const org = this.metrics.orgLabel ? call.caller.orgId : '';
        this.tokens.get(model, org, 'prompt')!.inc(billed.usage.promptTokens);
        this.tokens.get(model, org, 'completion')!.inc(billed.usage.completionTokens);
        if (billed.cost !== null) this.charged.get(model, org)!.inc(Number(billed.cost));
      }
      if (outcome.firstTokenAt) this.ttft.get(model)!.observe((outcome.firstTokenAt - call.startedAt) / 1000);
      if (call.upstreamAt)
        this.overhead.get(route)!.observe((call.upstreamAt - call.startedAt + (now - upstreamDoneAt)) / 1000);
      if (outcome.streamed) {
        this.requests.get(route, model, outcome.status, code)!.inc();
        this.duration.get(route, model)!.observe((now - call.startedAt) / 1000);
      }
    }
    const trace = call.trace;
    if (!trace) return;
    if (call.answeredAt)
      trace.record('tollgate.relay', call.answeredAt, upstreamDoneAt, { 'tollgate.streamed': outcome.streamed });
    const usage = outcome.billed?.usage;
    trace.record(
      'tollgate.charge',
      chargeStartedAt,
      now,
      usage
        ? { 'gen_ai.usage.input_tokens': usage.promptTokens, 'gen_ai.usage.output_tokens': usage.completionTokens }
        : {},
    );
    if (outcome.streamed) trace.end({ route, status: outcome.status, errorType: code, model }, now);
  }

  private refused(status: number, code: string): void {
    if (status === 429) this.rateLimited.get(LIMIT_OF_CODE[code] ?? 'other')!.inc();
    else if (status === 402) this.metrics?.insufficientFunds.inc();
    else if (status === 503) this.unavailable.get(CAUSE_OF_CODE[code] ?? 'other')!.inc();
  }
}

/** The error code a client got: the thrown error's, or '' for a success. */
function errorCodeOf(c: Context<GatewayEnv>, status: number): string {
  const error = c.error;
  if (error instanceof GatewayError) return error.code;
  if (error instanceof HTTPException && error.status === 413) return 'request_too_large';
  if (error) return 'internal_error';
  return status === 404 ? 'not_found' : '';
}
