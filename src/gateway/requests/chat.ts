import type { Context } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { createChatChunkRewriter } from '../proxy/chat-stream.js';
import { relaySse } from '../proxy/sse.js';
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
  upstreamBody(call, target) {
    const body: Record<string, unknown> = { ...call.body, model: target.servedModelName };
    // Object.assign rather than a spread followed by new properties, which V8 (Node 20) makes slow (CONTRIBUTING.md, "Measured on the request path").
    if (call.body.stream === true) body.stream_options = Object.assign({}, clientStreamOptions(call), { include_usage: true, continuous_usage_stats: true });
    return body;
  },
  estimate: (call, answer) => ({ promptTokens: estimatePromptTokens(call.body.messages), completionTokens: answer ? estimateCompletionTokens(answer.choices) : 0 }),
  relayStream: answerStream,
};

function clientStreamOptions(call: BilledCall): Record<string, unknown> {
  return (call.body.stream_options ?? {}) as Record<string, unknown>;
}

/**
 * The usage a chat stream is billed for when it ends. A stream cut before the
 * engine's final count is billed from its running count, or failing that,
 * from the token-carrying chunks the gateway saw: a cut stream is never
 * free. (vLLM's running count is one choice's; the chunks count every
 * choice's, so the larger of the two is taken.)
 */
export function streamedUsage(state: { usage: { promptTokens: number; completionTokens: number } | null; usageFinal: boolean; tokenChunks: number }, promptEstimate: () => number) {
  return state.usage
    ? { promptTokens: state.usage.promptTokens, completionTokens: Math.max(state.usage.completionTokens, state.usageFinal ? 0 : state.tokenChunks) }
    : { promptTokens: promptEstimate(), completionTokens: state.tokenChunks };
}

/** Relays the engine's stream chunk by chunk, showing the client usage only where it asked for it, and settles when it ends. */
function answerStream(c: Context<GatewayEnv>, services: BilledDeps, call: BilledCall, response: EngineResponse, options: StreamControls): Response {
  const asked = clientStreamOptions(call);
  const rewriter = createChatChunkRewriter({
    clientModel: call.clientModel,
    includeUsage: asked.include_usage === true,
    continuousUsage: asked.continuous_usage_stats === true,
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
      const { state } = rewriter;
      const usage = streamedUsage(state, () => estimatePromptTokens(call.body.messages));
      await settle(services, call, {
        usage,
        usageSource: state.usage ? 'upstream' : 'estimated',
        status: outcome === 'done' && !state.failed ? 200 : outcome === 'client_closed' ? 499 : 502,
        streamed: true,
        firstTokenAt: state.firstTokenAt,
        answer: delivered ? { kind: 'sse', events: delivered, ...usage } : undefined,
      });
    },
  });
  // Under load the headers wait for the first chunk, one socket write fewer; alone, they leave at once, so the
  // client reads them while the engine makes its first token (at one connection that is worth more than a write).
  if (services.inFlight.size > 1) headersWithFirstChunk(c);
  return c.body(relayed, 200, SSE_HEADERS);
}
