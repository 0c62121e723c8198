import type { Config } from '../../config/types.js';
import type { TaskType } from '../../shared/db/schema.js';
import type { UpstreamTarget } from '../engines/types.js';
import type { TokenUsage } from '../billing/token-usage.js';
import type { TokenBounds } from '../billing/token-bounds.js';
import type { Logger } from '../../shared/http/log.js';
import type { InFlight } from '../../shared/http/in-flight.js';
import type { OutageLog } from '../../shared/http/outage.js';
import type { Metrics } from '../../shared/observability/metrics.js';
import type { Observer } from '../../shared/observability/observer.js';
import type { ChargeJournal } from '../billing/journal.js';
import type { ResponseCache } from '../cache/response-cache.js';
import type { RequestPathCache } from '../catalog/request-path-cache.js';
import type { CacheSalts } from '../engines/cache-salts.js';
import type { Fleet } from '../engines/fleet.js';
import type { KeyService } from '../keys/service.js';
import type { GateKeeper } from '../admission/gate-keeper.js';
import type { DetachedCalls } from './detached-calls.js';
import type { FlowControl } from '../flow/flow-control.js';
import type { AuthorizedRequest, EndpointName } from './authorized-request.js';
import type { StreamWriter } from './stream-writer.js';
import type { WrittenJson } from '../proxy/client-body.js';
import type { EngineAgents } from '../proxy/engine-agents.js';
import type { RepeatedMembers } from '../../shared/http/repeated-members.js';
import type { TranslationJsonCache } from './translation-json.js';

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
  /** Each organization's cache salt, sent to the engines that keep organizations' caches apart. */
  cacheSalts: CacheSalts;
  /** Keep-alive connections to the engines, one pool per process (`proxy/engine-agents.ts`). */
  engineAgents: EngineAgents;
  journal: ChargeJournal;
  cache: ResponseCache;
  metrics: Metrics;
  observer: Observer;
  inFlight: InFlight;
  storeOutage: OutageLog;
  flow: FlowControl;
  /** The calls this replica runs with no client, stopped when their key or model is. */
  detachedCalls: DetachedCalls;
  /**
   * Each key's tools, system prompt and conversations as last sent, not parsed again
   * (`RepeatedMembers`).
   */
  repeatedMembers: RepeatedMembers;
  /**
   * Each organization's last translations' JSON, written once for its next turns
   * (`translation-json.ts`).
   */
  translations: TranslationJsonCache;
}

/**
 * How a relayed stream controls its call: stop the engine's work, and give back the replica when it
 * ends.
 */
export interface StreamControls {
  abort: () => void;
  release: () => void;
}

export type { EndpointName } from './authorized-request.js';

type Json = Record<string, unknown>;

/**
 * One protocol: what it reads from a request (its model's task, its checks),
 * and how it starts a call (`begin`). Everything else is `serveBilled`.
 */
export interface BilledEndpoint {
  name: EndpointName;
  /** The task its model must have (a chat model for every protocol that generates). */
  task: TaskType;
  /** Whether the key may also come as `x-api-key` (the Anthropic routes; `requests/auth.ts`). */
  acceptsApiKeyHeader?: boolean;
  /** The engine's path below its `/v1`. */
  path: string;
  /**
   * Refuses a body the gateway cannot bill or relay (400 with details); every other field is the
   * engine's to judge.
   */
  validate(body: Json, config: Config): void;
  /**
   * Arrays of numbers under this key are relayed as the engine wrote them, never parsed
   * (embeddings' vectors).
   */
  liftArrays?: string;
  /**
   * Adjusts the engine's JSON answer for the client, in place (the model name is already the
   * client's).
   */
  shapeAnswer?(answer: Json): void;
  /**
   * Starts one request's call, once it is authorized: reads what it needs (the Responses API: the
   * stored conversation `previous_response_id` continues; may refuse) and makes the body the engine
   * is sent.
   */
  begin(request: AuthorizedRequest, deps: BilledDeps): ProtocolCall | Promise<ProtocolCall>;
  /**
   * True for a request whose `begin` reads the store (a stored conversation `previous_response_id`
   * continues): the key's requests per minute and concurrency are then admitted before it
   * (`serveBilled`), so a refused key costs no store read. Otherwise they are taken in the one
   * admission step with the rest: a translation alone costs less than the parse every protocol does
   * before any limit, and less than the Redis round trip a step of its own costs every admitted
   * request.
   */
  admitsRateFirst?(request: AuthorizedRequest): boolean;
}

/**
 * One request of one protocol, made by `BilledEndpoint.begin`: what the engine is sent (the
 * translation, for Messages and Responses, with the stored history), what the token bounds, the
 * hold and the token limits' estimate read of it, and how its answer reaches the client.
 */
export interface ProtocolCall {
  /**
   * The Responses API's response id, made once per call (a background response is answered with it
   * first).
   */
  responseId?: string;
  /**
   * The fields the token bounds and the token limits' estimate read, in chat's names (`messages`,
   * `tools`, `max_tokens`, `max_completion_tokens`, `n`, `best_of`), as the engine is sent them.
   */
  bounded: Json;
  /**
   * The size in bytes of the body the engine is sent: the prompt's bound (a text token is at least
   * a byte).
   */
  sentBytes: number;
  /**
   * The body sent to one replica (or its JSON written): what every replica is sent, naming its
   * served model.
   */
  bodyFor(target: UpstreamTarget): Json | string | WrittenJson;
  /**
   * Usage when the engine reported none valid: from the request, and from the answer if there is
   * one.
   */
  estimate(answer: Json | null): TokenUsage;
  /**
   * The answer's JSON for the client, when the protocol's answer is not the engine's (Messages,
   * Responses).
   */
  answerOf?(answer: Json): Json | Promise<Json>;
  /**
   * How the answer's stream is written for the client, its usage shown held to the call's `bounds`
   * as it is billed; null when the request is answered as JSON.
   */
  stream: ((bounds: TokenBounds) => StreamWriter) | null;
}
