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
import { itemId, responseOf } from './answer.js';
import { type ConversationDeps, createConversations } from './conversation.js';
import { ResponsesWriter } from './stream.js';
import { responsesRequestErrors, toolNamesOf } from './translate.js';

type Json = Record<string, unknown>;

/**
 * OpenAI's Responses API (`POST /v1/responses`), JSON or SSE, translated to
 * the engine's chat completions (`translate.ts` says why) and the answer back
 * (`answer.ts`, `stream.ts`). Billed from the engine's usage exactly as chat
 * is. With a store, a response is kept unless `store: false`, and
 * `previous_response_id` continues a kept one (`conversation.ts`).
 *
 * @example
 * routes.post('/', (c) => serveBilled(c, services, responsesEndpoint({ store: services.responseStore, log: services.log })));
 */
export function responsesEndpoint(deps: ConversationDeps): BilledEndpoint {
  const conversations = createConversations(deps);
  return {
    name: 'responses',
    task: 'chat',
    path: '/chat/completions',
    validate(body, config) {
      const details = responsesRequestErrors(body, config.translation);
      if (details.length > 0) throw invalid(details);
    },
    prepare: (request) => conversations.load(request),
    boundedFields: (body) => conversations.chatOf(body),
    streams: (body) => body.stream === true,
    upstreamBody(call, target) {
      const chat = conversations.chatOf(call.body);
      const body: Json = { ...chat, model: target.servedModelName };
      // As for Messages: a ceiling past the room the prompt leaves is not sent; the engine then stops at the context's end.
      if (
        typeof chat.max_tokens === 'number' &&
        chat.max_tokens + estimatePromptTokens(chat.messages) >= call.model.contextLength
      )
        delete body.max_tokens;
      if (call.body.stream === true) body.stream_options = { include_usage: true, continuous_usage_stats: true };
      return body;
    },
    async answerOf(answer, call) {
      const response = responseOf(answer, call.body, toolNamesOf(call.body), itemId('resp'), call.clientModel);
      await conversations.keep(call, response);
      return response;
    },
    estimate: (call, answer) => ({
      promptTokens: estimatePromptTokens(conversations.chatOf(call.body).messages),
      completionTokens: answer ? estimateCompletionTokens(answer.choices) : 0,
    }),
    relayStream: (c, deps, call, response, controls) =>
      relayResponses(c, deps, call, response, controls, conversations),
  };
}

function relayResponses(
  c: Context<GatewayEnv>,
  services: BilledDeps,
  call: BilledCall,
  response: EngineResponse,
  controls: StreamControls,
  conversations: ReturnType<typeof createConversations>,
): Response {
  const writer = new ResponsesWriter({
    body: call.body,
    names: toolNamesOf(call.body),
    id: itemId('resp'),
    model: call.clientModel,
  });
  const delivered: string[] | null = keepsAnswer(call) ? [] : null;
  // The last events are written when the stream ends, before it is settled: the response is kept (or not) first.
  let last: string | null = null;
  const relayed = relaySse({
    upstream: response.body,
    onData: (data) => {
      const events = writer.rewrite(data);
      if (events !== null) delivered?.push(events);
      return events;
    },
    abortUpstream: controls.abort,
    events: { finish: () => last ?? writer.failure(), failure: () => last ?? writer.failure() },
    onEnd: async (outcome) => {
      controls.release();
      if (outcome === 'done' && !writer.state.failed) {
        const closing = writer.closeItems();
        await conversations.keep(call, writer.finalResponse());
        last = closing + writer.completed();
      } else if (outcome === 'upstream_failed' || writer.state.failed) last = writer.failure();
      if (last !== null) delivered?.push(last);
      await settleStream(services, call, {
        state: writer.state,
        outcome,
        promptEstimate: () => estimatePromptTokens(conversations.chatOf(call.body).messages),
        kept: delivered,
      });
    },
  });
  return c.body(relayed, 200, SSE_HEADERS);
}
