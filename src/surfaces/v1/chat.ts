import { type Context, Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { createChatChunkRewriter } from '../../gateway/proxy/chat-stream.js';
import { relaySse } from '../../gateway/proxy/sse.js';
import type { EngineResponse } from '../../gateway/proxy/upstream.js';
import { estimateCompletionTokens, estimatePromptTokens } from '../../gateway/proxy/usage.js';
import type { Services } from '../../services.js';
import { type BilledCall, keepsAnswer, settle } from '../../gateway/requests/billed-call.js';
import { type BilledEndpoint, serveBilled, type StreamControls } from '../../gateway/requests/billed-request.js';
import { SSE_HEADERS } from '../../gateway/requests/cached-answer.js';
import { headersWithFirstChunk } from '../../shared/http/request.js';

/**
 * POST /v1/chat/completions, JSON or SSE. The body goes upstream unchanged but
 * for the model's served name and, on streams, usage reporting switched on:
 * the gateway always asks the engine for its final and running usage, so any
 * stream, even one cut short, is billed from the engine's count.
 */
export const CHAT: BilledEndpoint = {
  task: 'chat',
  path: '/chat/completions',
  streams: (body) => body.stream === true,
  upstreamBody(call, target) {
    const body: Record<string, unknown> = { ...call.body, model: target.servedModelName };
    // Object.assign rather than a spread followed by new properties, which V8 (Node 20) makes slow (docs/benchmark.md, ninth round).
    if (call.body.stream === true) body.stream_options = Object.assign({}, clientStreamOptions(call), { include_usage: true, continuous_usage_stats: true });
    return body;
  },
  estimate: (call, answer) => ({ promptTokens: estimatePromptTokens(call.body.messages), completionTokens: answer ? estimateCompletionTokens(answer.choices) : 0 }),
  relayStream: answerStream,
};

function chatCompletions(c: Context<GatewayEnv>, services: Services): Promise<Response> {
  return serveBilled(c, services, CHAT);
}

function clientStreamOptions(call: BilledCall): Record<string, unknown> {
  return (call.body.stream_options ?? {}) as Record<string, unknown>;
}

/** Relays the engine's stream chunk by chunk, showing the client usage only where it asked for it, and settles when it ends. */
function answerStream(c: Context<GatewayEnv>, services: Services, call: BilledCall, response: EngineResponse, options: StreamControls): Response {
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
      // A stream cut before the engine's final count is billed from its running count,
      // or failing that, from what the gateway saw: a cut stream is never free.
      const usage = state.usage
        ? { promptTokens: state.usage.promptTokens, completionTokens: Math.max(state.usage.completionTokens, state.usageFinal ? 0 : state.tokenChunks) }
        : { promptTokens: estimatePromptTokens(call.body.messages), completionTokens: state.tokenChunks };
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

/**
 * `POST /v1/chat/completions`, JSON or SSE: a billed request (`gateway/requests/billed-request.ts`).
 *
 * @example
 * v1.route('/chat', chatRoutes(services));
 */
export function chatRoutes(services: Services): Hono<GatewayEnv> {
  const chat = new Hono<GatewayEnv>();
  // Billed routes authenticate inside admit(), in the same read as model, price and balance.
  chat.post('/completions', (c) => chatCompletions(c, services));
  return chat;
}
