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
