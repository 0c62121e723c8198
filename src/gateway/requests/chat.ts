import type { Context } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { type ChatStreamState, createChatChunkRewriter } from '../proxy/chat-stream.js';
import { type RelayOutcome, relaySse } from '../proxy/sse.js';
import type { EngineResponse } from '../proxy/upstream.js';
import { estimateCompletionTokens, estimatePromptTokens } from '../proxy/usage.js';
import { headersWithFirstChunk } from '../../shared/http/request.js';
import { type BilledCall, keepsAnswer, settle } from './billed-call.js';
import { SSE_HEADERS } from './cached-answer.js';
import type { BilledDeps, BilledEndpoint, StreamControls } from './endpoint.js';
import { validateChatRequest } from './validate.js';

/**
 * Chat completions, JSON or SSE. The body goes upstream unchanged but for the
 * model's served name and, on streams, usage reporting switched on: the
 * gateway always asks the engine for its final and running usage, so any
 * stream, even one cut short, is billed from the engine's count.
 */
export const CHAT: BilledEndpoint = {
  name: 'chat.completions',
  task: 'chat',
  path: '/chat/completions',
  validate: (body, config) => validateChatRequest(body, config.maxChoices),
  streams: (body) => body.stream === true,
  upstreamBody: (call, target) => openAiUpstreamBody(call, target.servedModelName),
  estimate: (call, answer) => ({
    promptTokens: estimatePromptTokens(call.body.messages),
    completionTokens: answer ? estimateCompletionTokens(answer.choices) : 0,
  }),
  relayStream: (c, deps, call, response, controls) =>
    relayChunks(c, deps, call, response, controls, {
      // The engine's own count (template and tools included) when it reported none, else about 4 characters a token.
      promptEstimate: async () => (await response.countPrompt?.()) ?? estimatePromptTokens(call.body.messages),
    }),
};

function clientStreamOptions(call: BilledCall): Record<string, unknown> {
  return (call.body.stream_options ?? {}) as Record<string, unknown>;
}

/** The body for the engine: the client's, naming the replica's model, and on streams asking for final and running usage. */
export function openAiUpstreamBody(call: BilledCall, servedModelName: string): Record<string, unknown> {
  const body: Record<string, unknown> = { ...call.body, model: servedModelName };
  // Object.assign rather than a spread followed by new properties, which V8 (Node 20) makes slow (CONTRIBUTING, "Measured on the request path").
  if (call.body.stream === true)
    body.stream_options = Object.assign({}, clientStreamOptions(call), {
      include_usage: true,
      continuous_usage_stats: true,
    });
  return body;
}

/**
 * The usage a chat stream is billed for when it ends. A stream cut before the
 * engine's final count is billed from its running count, or failing that,
 * from the token-carrying chunks the gateway saw: a cut stream is never
 * free. (vLLM's running count is one choice's; the chunks count every
 * choice's, so the larger of the two is taken.)
 */
function streamedUsage(
  state: { usage: { promptTokens: number; completionTokens: number } | null; usageFinal: boolean; tokenChunks: number },
  promptEstimate: () => number,
) {
  return state.usage
    ? {
        promptTokens: state.usage.promptTokens,
        completionTokens: Math.max(state.usage.completionTokens, state.usageFinal ? 0 : state.tokenChunks),
      }
    : { promptTokens: promptEstimate(), completionTokens: state.tokenChunks };
}

/** How a relayed stream ended, for its charge. */
export interface EndedStream {
  state: ChatStreamState;
  outcome: RelayOutcome;
  promptEstimate: () => number | Promise<number>;
  /** The events as the client got them, kept with the usage record or the cache; null when neither keeps them. */
  kept: string[] | null;
}

/** Settles a relayed stream, whatever its protocol: billed from `streamedUsage`, its status from how it ended. */
export async function settleStream(deps: BilledDeps, call: BilledCall, ended: EndedStream): Promise<void> {
  const { state, outcome } = ended;
  const prompt = state.usage ? 0 : await ended.promptEstimate();
  const usage = streamedUsage(state, () => prompt);
  return settle(deps, call, {
    usage,
    usageSource: state.usage ? 'upstream' : 'estimated',
    status: outcome === 'done' && !state.failed ? 200 : outcome === 'client_closed' ? 499 : 502,
    streamed: true,
    firstTokenAt: state.firstTokenAt,
    answer: ended.kept ? { kind: 'sse', events: ended.kept, ...usage } : undefined,
  });
}

/** What differs between the OpenAI-style streams (chat and completions chunks) that `relayChunks` relays. */
export interface ChunkStream {
  promptEstimate: () => number | Promise<number>;
  carriesTokens?: (choice: Record<string, unknown>) => boolean;
}

/**
 * Relays an OpenAI-style stream (chat or completions chunks) chunk by chunk,
 * showing the client usage only where it asked for it, and settles when it ends.
 */
export function relayChunks(
  c: Context<GatewayEnv>,
  services: BilledDeps,
  call: BilledCall,
  response: EngineResponse,
  options: StreamControls,
  kind: ChunkStream,
): Response {
  const asked = clientStreamOptions(call);
  const rewriter = createChatChunkRewriter({
    clientModel: call.clientModel,
    includeUsage: asked.include_usage === true,
    continuousUsage: asked.continuous_usage_stats === true,
    carriesTokens: kind.carriesTokens,
  });
  // The events as the client got them, only when the key keeps or caches answers.
  const delivered: string[] | null = keepsAnswer(call) ? [] : null;
  const relayed = relaySse({
    upstream: response.body,
    onData: (data) => {
      const forwarded = rewriter.rewrite(data);
      if (forwarded !== null) delivered?.push(forwarded);
      return forwarded;
    },
    abortUpstream: options.abort,
    onEnd: async (outcome) => {
      options.release();
      await settleStream(services, call, {
        state: rewriter.state,
        outcome,
        promptEstimate: kind.promptEstimate,
        kept: delivered,
      });
    },
  });
  // Under load the headers wait for the first chunk, one socket write fewer; alone, they leave at once, so the
  // client reads them while the engine makes its first token (at one connection that is worth more than a write).
  if (services.inFlight.size > 1) headersWithFirstChunk(c);
  return c.body(relayed, 200, SSE_HEADERS);
}
