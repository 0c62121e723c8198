import type { CachedResponse } from '../cache/response-cache.js';
import type { RelayOutcome } from '../proxy/sse.js';
import { clampUsage, type TokenBounds } from './token-bounds.js';
import type { TokenUsage, UsageSource } from './token-usage.js';

/**
 * How a call ended, as the gateway bills and records it (`requests/billed-call.ts`'s `settle` makes
 * it durable).
 */
export interface Settlement {
  usage: TokenUsage;
  usageSource: UsageSource;
  status: number;
  streamed: boolean;
  firstTokenAt?: number | null;
  /**
   * The answer as the client received it: kept for keys that store request data, and cached for
   * keys with the cache on.
   */
  answer?: CachedResponse;
}

/**
 * What a relayed stream learnt of the engine's, whatever its protocol: read when it ends, to bill
 * it.
 */
export interface StreamState {
  /** The engine's latest usage: final when `usageFinal`, else the running count of a cut stream. */
  usage: TokenUsage | null;
  usageFinal: boolean;
  /** Chunks that carried generated text, the fallback count when no usage arrived at all. */
  tokenChunks: number;
  firstTokenAt: number | null;
  /** The engine sent an error event inside the stream. */
  failed: boolean;
}

/** A stream's state before its first chunk. */
export function newStreamState(): StreamState {
  return { usage: null, usageFinal: false, tokenChunks: 0, firstTokenAt: null, failed: false };
}

/**
 * The usage a stream is billed for, the one rule for every protocol. A stream
 * cut before the engine's final count is billed from its running count, or
 * failing that, from the token-carrying chunks the gateway saw: a cut stream
 * is never free. (vLLM's running count is one choice's; the chunks count
 * every choice's, so the larger of the two is taken.) Null when the engine
 * reported no count at all: then the prompt is the caller's estimate.
 */
export function streamedUsage(state: Pick<StreamState, 'usage' | 'usageFinal' | 'tokenChunks'>): TokenUsage | null {
  if (!state.usage) return null;
  return {
    ...state.usage,
    completionTokens: Math.max(state.usage.completionTokens, state.usageFinal ? 0 : state.tokenChunks),
  };
}

/**
 * A stream's usage as its client is shown it: `streamedUsage` held to the call's bounds, as
 * `chargeFor` bills it (the same clamp). Null when the engine reported no count.
 */
export function shownStreamUsage(
  state: Pick<StreamState, 'usage' | 'usageFinal' | 'tokenChunks'>,
  bounds: TokenBounds,
): TokenUsage | null {
  const counted = streamedUsage(state);
  return counted && clampUsage(counted, bounds).usage;
}

/**
 * The settlement of a stream, whatever its protocol: billed from `streamedUsage` (or, with no count
 * from the engine, the prompt's estimate and the chunks seen), its status from how it ended, and
 * the events the client got when they are kept (null: neither the cache nor the request data keeps
 * them).
 */
export function streamSettlement(
  state: StreamState,
  outcome: RelayOutcome,
  promptEstimate: () => number,
  kept: string[] | null,
): Settlement {
  const counted = streamedUsage(state);
  const usage = counted ?? { promptTokens: promptEstimate(), completionTokens: state.tokenChunks };
  return {
    usage,
    usageSource: counted ? 'upstream' : 'estimated',
    status: outcome === 'done' && !state.failed ? 200 : outcome === 'client_closed' ? 499 : 502,
    streamed: true,
    firstTokenAt: state.firstTokenAt,
    answer: kept ? { kind: 'sse', events: kept, ...usage } : undefined,
  };
}
