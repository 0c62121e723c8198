import type { Band } from './bands.js';

/**
 * What goes in and out of flow control (`flow-control.ts`): a request, its pass, room, what is
 * reported.
 */

/**
 * Where room comes from: the sequences a model's replicas can take now from this gateway; null when
 * unknown.
 */
export interface RoomSource {
  freeSlots(modelId: string): number | null;
  /**
   * Whether the model's engines schedule by priority (a better band preempts a worse one's running
   * request inside the engine): a request's room then counts worse bands' requests as free.
   */
  schedulesByPriority?(modelId: string): boolean;
  /**
   * Told how many requests wait for the model whenever that changes (an autoscaler counts them as
   * waiting).
   */
  waitingInGateway?(modelId: string, count: number): void;
}

/** One request asking to go to a model's engines. */
export interface FlowRequest {
  modelId: string;
  orgId: string;
  band: Band;
  /** The organization's share weight (1 to 1000). */
  weight: number;
  /** Prompt tokens (an estimate) and the most it can generate: what it is expected to be served. */
  promptTokens: number;
  completionBound: number;
}

/** A request's place on the engines; `done` once it ends (exactly once; later calls do nothing). */
export interface FlowPass {
  /** Whether it waited in the queue, and how long (ms). */
  readonly waitedMs: number;
  /** The replica another gateway handed this request a slot on (`FlowPeers`), for the router. */
  readonly replica?: string;
  /**
   * The `priority` it is sent with where its engine schedules by priority (`enginePriority`): its
   * band's, or ahead of its band's others while its organization is below its share.
   */
  readonly priority?: number;
  /** Told the replica it runs on: the slot its end frees there may be handed to another gateway. */
  ranOn(replicaId: string): void;
  done(used: { promptTokens: number; completionTokens: number }): void;
}

/** What the operator's page and the metrics read. */
export interface FlowSnapshot {
  models: Array<{
    model: string;
    inFlight: number;
    freeSlots: number | null;
    waiting: Array<{ band: Band; orgId: string; requests: number }>;
  }>;
  /** Tokens served since the gateway started, per organization (prompt and generated). */
  served: Array<{ orgId: string; promptTokens: number; completionTokens: number }>;
}

/** What each outcome of a wait reports to metrics. */
export interface FlowEvents {
  dispatched(request: FlowRequest, waitedMs: number): void;
  refused(request: FlowRequest, reason: 'queue_full' | 'waited_too_long'): void;
  left(request: FlowRequest): void;
  served(request: FlowRequest, used: { promptTokens: number; completionTokens: number }): void;
}

/** A gateway's first waiting request of a model, as the peers rank it: its band and organization. */
export interface WaitingHead {
  band: number;
  orgId: string;
}

/**
 * The other gateway replicas in front of the same engines (`flow-peers.ts`): each tells the others
 * its first waiting request of a model, and a gateway that frees a slot while another's waiting
 * request goes before its own hands the slot over instead of refilling it from its own queue.
 */
export interface FlowPeers {
  /**
   * Tells the other gateways this one's first waiting request of a model (null: none waits here)
   * and its requests in flight by organization.
   */
  tell(modelId: string, head: WaitingHead | null, inFlightByOrg: ReadonlyMap<string, number>): void;
  /**
   * The gateway whose waiting request goes before `head` (this gateway's first, null when none
   * waits here): a better band, or in the same band an organization with fewer requests in flight
   * over every gateway. Null when none does.
   */
  before(modelId: string, head: WaitingHead | null, inFlightByOrg: ReadonlyMap<string, number>): string | null;
  /** Hands a slot of the model this gateway freed (on `replica`, when known) to gateway `to`. */
  give(modelId: string, to: string, replica: string | null): void;
  /** Called with the model (and replica, when known) when another gateway hands this one a slot. */
  onGiven(handler: (modelId: string, replica: string | null) => void): void;
  /**
   * How long a slot given away stays counted as taken here: until the engines' figures, read
   * again, show the other gateway's request on it.
   */
  readonly lendMs: number;
  /** Says nothing waits here any more, and stops listening. */
  close(): void;
}
