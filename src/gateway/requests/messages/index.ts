import type { Context } from 'hono';
import type { GatewayEnv } from '../../../shared/http/context.js';
import { relaySse } from '../../proxy/sse.js';
import type { EngineResponse } from '../../proxy/upstream.js';
import { estimateCompletionTokens, estimatePromptTokens } from '../../proxy/usage.js';
import { type BilledCall, keepsAnswer } from '../billed-call.js';
import { SSE_HEADERS } from '../cached-answer.js';
import { settleStream } from '../chat.js';
import type { BilledDeps, BilledEndpoint, StreamControls } from '../endpoint.js';
import { invalid } from '../validate.js';
import { messageOf } from './answer.js';
import { createMessagesWriter, messagesStreamFailure } from './stream.js';
import { chatBodyOf, messagesRequestErrors } from './translate.js';

type Json = Record<string, unknown>;

/** Each request's chat translation, made once: the bounds, the estimate and every replica tried read it. */
const translations = new WeakMap<Json, Json>();

export function chatOf(body: Json): Json {
  let chat = translations.get(body);
  if (!chat) {
    chat = chatBodyOf(body);
    translations.set(body, chat);
  }
  return chat;
}

/**
 * Anthropic's Messages (`POST /v1/messages`), JSON or SSE, translated to the
 * engine's chat completions (`translate.ts` says why) and the answer back
 * (`answer.ts`, `stream.ts`). Billed from the engine's usage exactly as chat
 * is: the hold from `max_tokens` and the body's bytes, the charge from the
 * engine's count, a stream cut short from its running count.
 */
export const MESSAGES: BilledEndpoint = {
  name: 'messages',
  task: 'chat',
  path: '/chat/completions',
  acceptsApiKeyHeader: true,
  validate(body, config) {
    const details = messagesRequestErrors(body, config.translation);
    if (details.length > 0) throw invalid(details);
  },
  boundedFields: chatOf,
  streams: (body) => body.stream === true,
  upstreamBody(call, target) {
    const chat = chatOf(call.body);
    const body: Json = { ...chat, model: target.servedModelName };
    // Anthropic's max_tokens is a ceiling clients set whatever the model (Claude Code asks 32,000); vLLM refuses one
    // the context cannot hold. Past the room the prompt leaves, none is sent: the engine then stops at the context's end.
    if ((chat.max_tokens as number) + estimatePromptTokens(chat.messages) >= call.model.contextLength)
      delete body.max_tokens;
    if (call.body.stream === true) body.stream_options = { include_usage: true, continuous_usage_stats: true };
    return body;
  },
  answerOf: (answer, call) => messageOf(answer, call.clientModel),
  estimate: (call, answer) => ({
    promptTokens: estimatePromptTokens(chatOf(call.body).messages),
    completionTokens: answer ? estimateCompletionTokens(answer.choices) : 0,
  }),
  relayStream: relayMessages,
};

function relayMessages(
  c: Context<GatewayEnv>,
  services: BilledDeps,
  call: BilledCall,
  response: EngineResponse,
  controls: StreamControls,
): Response {
  const writer = createMessagesWriter(call.clientModel);
  const delivered: string[] | null = keepsAnswer(call) ? [] : null;
  const relayed = relaySse({
    upstream: response.body,
    onData: (data) => {
      const events = writer.rewrite(data);
      if (events !== null) delivered?.push(events);
      return events;
    },
    abortUpstream: controls.abort,
    events: {
      finish: () => (writer.state.failed ? messagesStreamFailure() : writer.finish()),
      failure: messagesStreamFailure,
    },
    onEnd: async (outcome) => {
      controls.release();
      // Cached events replay as `data:` lines, which Anthropic's clients do not read: a Messages stream is kept, never cached.
      const kept = delivered && !call.caller.responseCache ? delivered : null;
      await settleStream(services, call, {
        state: writer.state,
        outcome,
        promptEstimate: () => estimatePromptTokens(chatOf(call.body).messages),
        kept,
      });
    },
  });
  return c.body(relayed, 200, SSE_HEADERS);
}
