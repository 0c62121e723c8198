import type { Context } from 'hono';
import type { Config } from '../../config/types.js';
import type { TaskType } from '../../shared/db/schema.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { UpstreamTarget } from '../engines/types.js';
import type { EngineResponse } from '../proxy/upstream.js';
import type { TokenUsage } from '../proxy/usage.js';
import type { Logger } from '../../shared/http/log.js';
import type { InFlight } from '../../shared/http/in-flight.js';
import type { OutageLog } from '../../shared/http/outage.js';
import type { Metrics } from '../../shared/observability/metrics.js';
import type { Observer } from '../../shared/observability/observer.js';
import type { ChargeJournal } from '../billing/journal.js';
import type { ResponseCache } from '../cache/response-cache.js';
import type { RequestPathCache } from '../catalog/request-path-cache.js';
import type { Fleet } from '../engines/fleet.js';
import type { KeyService } from '../keys/service.js';
import type { GateKeeper } from '../limits/gate-keeper.js';
import type { AuthorizedRequest, BilledCall } from './admission.js';

/**
 * What the billed path uses of the gateway's services, and nothing more: a
 * request's whole life needs these, so a test or a bench can give it these.
 * Declared here, not picked from `Services`: the gateway names nothing above it.
 */
export interface BilledDeps {
  config: Config;
  log: Logger;
  keys: KeyService;
  requestPathCache: RequestPathCache;
  gateKeeper: GateKeeper;
  fleet: Fleet;
  journal: ChargeJournal;
  cache: ResponseCache;
  metrics: Metrics;
  observer: Observer;
  inFlight: InFlight;
  storeOutage: OutageLog;
}

/** How a relayed stream controls its call: stop the engine's work, and give back the replica when it ends. */
export interface StreamControls {
  abort: () => void;
  release: () => void;
}

/** The protocols the gateway bills, as usage records name them (`usage_records.endpoint`) and the response cache keys them. */
export type EndpointName = 'chat.completions' | 'embeddings' | 'completions' | 'messages' | 'responses';

/**
 * One protocol, as DESIGN.md's "A billed request" reads: what it reads from a
 * request (its model's task, its checks, the fields its token bounds read),
 * what it sends the engine, how it finds usage in the engine's answer (JSON,
 * or its stream's own events), and how it answers its clients. Everything
 * else is `serveBilled`.
 */
export interface BilledEndpoint {
  name: EndpointName;
  /** The task its model must have (a chat model for every protocol that generates). */
  task: TaskType;
  /** Whether the key may also come as `x-api-key` (the Anthropic routes; `requests/auth.ts`). */
  acceptsApiKeyHeader?: boolean;
  /** The engine's path below its `/v1`. */
  path: string;
  /** Refuses a body the gateway cannot bill or relay (400 with details); every other field is the engine's to judge. */
  validate(body: Record<string, unknown>, config: Config): void;
  /**
   * What the endpoint reads before the hold, once the request is authorized (the Responses API: the stored
   * conversation `previous_response_id` continues); may refuse.
   */
  prepare?(request: AuthorizedRequest): Promise<void>;
  /**
   * The fields the token bounds and the token limits' estimate read, in chat's names
   * (`messages`, `max_tokens`, `max_completion_tokens`, `n`, `best_of`; `prompt` for completions),
   * when the protocol names them otherwise. Default: the body itself.
   */
  boundedFields?(body: Record<string, unknown>): Record<string, unknown>;
  /** Whether this request is answered as a stream (then `relayStream` answers it). */
  streams(body: Record<string, unknown>): boolean;
  /** The body sent to one replica: the client's, naming the replica's served model, plus what the endpoint adds. */
  upstreamBody(call: BilledCall, target: UpstreamTarget): Record<string, unknown>;
  /** Arrays of numbers under this key are relayed as the engine wrote them, never parsed (embeddings' vectors). */
  liftArrays?: string;
  /** Adjusts the engine's JSON answer for the client, in place (the model name is already the client's). */
  shapeAnswer?(answer: Record<string, unknown>): void;
  /** The answer's JSON for the client, when the protocol's answer is not the engine's (Messages, Responses); default: the engine's, shaped. */
  answerOf?(
    answer: Record<string, unknown>,
    call: BilledCall,
  ): Record<string, unknown> | Promise<Record<string, unknown>>;
  /** Usage when the engine reported none valid: from the request, and from the answer if there is one. */
  estimate(call: BilledCall, answer: Record<string, unknown> | null): TokenUsage;
  /** Relays a streamed answer and settles the call when the stream ends. */
  relayStream?(
    c: Context<GatewayEnv>,
    deps: BilledDeps,
    call: BilledCall,
    response: EngineResponse,
    controls: StreamControls,
  ): Response;
}
