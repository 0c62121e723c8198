import type { Context } from 'hono';
import type { GatewayEnv } from '../http/context.js';
import { createChatChunkRewriter } from '../proxy/chat-stream.js';
import { withoutNullFields } from '../proxy/openai-shape.js';
import { relaySse } from '../proxy/sse.js';
import { postWithFailover } from '../proxy/failover.js';
import { readEngineJson } from '../proxy/upstream.js';
import type { UpstreamTarget } from '../engines/types.js';
import { estimateCompletionTokens, estimatePromptTokens, usageFrom } from '../proxy/usage.js';
import type { Services } from '../services.js';
import { authorize, reserve } from './admission.js';
import { abandon, type BilledCall, settle, settleClientGone } from './billed-call.js';
import { cachedAnswer, SSE_HEADERS } from './cached-answer.js';

/**
 * POST /v1/chat/completions, JSON or SSE. The body goes upstream unchanged but
 * for the model's served name and, on streams, usage reporting switched on.
 */
export async function chatCompletions(c: Context<GatewayEnv>, services: Services): Promise<Response> {
  const request = await authorize(c, services, 'chat');
  const cached = await cachedAnswer(c, services, request);
  if (cached) return cached;
  const call = await reserve(c, services, request);
  const upstreamAbort = new AbortController();
  const stream = call.body.stream === true;
  // A JSON client that leaves aborts the engine's work at once; a stream's relay does the same when its client leaves.
  const clientGone = c.req.raw.signal;
  const signal = AbortSignal.any([upstreamAbort.signal, AbortSignal.timeout(services.config.upstreamTimeoutMs), ...(stream ? [] : [clientGone])]);
  const clientStreamOptions = (call.body.stream_options ?? {}) as Record<string, unknown>;
  const upstreamBody = (target: UpstreamTarget): Record<string, unknown> => ({
    ...call.body,
    model: target.servedModelName,
    ...(stream ? { stream_options: { ...clientStreamOptions, include_usage: true, continuous_usage_stats: true } } : {}),
  });

  // A relayed stream releases its target when it ends; everything else releases it here.
  let target: UpstreamTarget | undefined;
  let relaying = false;
  try {
    const sent = await postWithFailover({
      acquire: (exclude) => services.fleet.acquire(call.model.id, exclude),
      path: '/chat/completions',
      body: upstreamBody,
      clientModel: call.clientModel,
      signal,
    });
    target = sent.target;
    if (!stream) return await answerJson(c, services, call, sent.response);
    relaying = true;
    const relayedTarget = target;
    return answerStream(c, services, call, sent.response, {
      includeUsage: clientStreamOptions.include_usage === true,
      continuousUsage: clientStreamOptions.continuous_usage_stats === true,
      abort: () => upstreamAbort.abort(),
      release: () => relayedTarget.release(),
    });
  } catch (error) {
    if (!stream && clientGone.aborted) return settleClientGone(services, call, estimatePromptTokens(call.body.messages));
    await abandon(services, call);
    throw error;
  } finally {
    if (!relaying) target?.release();
  }
}

async function answerJson(c: Context<GatewayEnv>, services: Services, call: BilledCall, response: Response): Promise<Response> {
  const completion = await readEngineJson(response);
  completion.model = call.clientModel;
  const text = JSON.stringify(withoutNullFields(completion));
  const reported = usageFrom(completion.usage);
  const usage = reported ?? { promptTokens: estimatePromptTokens(call.body.messages), completionTokens: estimateCompletionTokens(completion.choices) };
  await settle(services, call, {
    usage,
    usageSource: reported ? 'upstream' : 'estimated',
    status: 200,
    streamed: false,
    answer: { kind: 'json', body: text, ...usage },
  });
  return c.body(text, 200, { 'content-type': 'application/json' });
}

interface StreamOptions {
  includeUsage: boolean;
  continuousUsage: boolean;
  abort(): void;
  release(): void;
}

function answerStream(c: Context<GatewayEnv>, services: Services, call: BilledCall, response: Response, options: StreamOptions): Response {
  const rewriter = createChatChunkRewriter({ clientModel: call.clientModel, ...options });
  // The events as the client got them, only when the key keeps or caches answers.
  const delivered: string[] | null = call.caller.storeRequestData || call.caller.responseCache ? [] : null;
  const relayed = relaySse({
    upstream: response.body!,
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
  return c.body(relayed, 200, SSE_HEADERS);
}
