import type { Config } from '../../../config/types.js';
import { streamedFromEngine } from '../engine-stream.js';
import type { TokenBounds } from '../../billing/token-bounds.js';
import { estimateChatPromptTokens, estimateCompletionTokens } from '../../proxy/token-counts.js';
import type { AuthorizedRequest } from '../authorize.js';
import type { BilledEndpoint, ProtocolCall } from '../endpoint.js';
import type { StreamWriter } from '../stream-writer.js';
import { keepCeilingWithinContext, sentBody } from '../sent-body.js';
import type { TranslationJsonCache } from '../translation-json.js';
import { invalid } from '../validate.js';
import { itemId, responseOf } from './answer.js';
import { type ConversationDeps, createConversations, type TurnInput } from './conversation.js';
import { hasReferences, referenceCountErrors } from './references.js';
import { ResponsesWriter, type ResponsesStreamSource } from './stream.js';
import { chatBodyOf, responsesRequestErrors, toolNamesOf } from './translate.js';

type Json = Record<string, unknown>;
type Conversations = ReturnType<typeof createConversations>;

/**
 * OpenAI's Responses API (`POST /v1/responses`), JSON or SSE, translated to
 * the engine's chat completions (`translate.ts` says why) and the answer back
 * (`answer.ts`, `stream.ts`). Billed from the engine's usage exactly as chat
 * is. With a store, a response is kept unless `store: false`, and
 * `previous_response_id` continues a kept one (`conversation.ts`).
 *
 * @example
 * routes.post('/', (c) => serveBilled(c, deps, responsesEndpoint({ store: deps.responseStore, log: deps.log })));
 */
export function responsesEndpoint(deps: ConversationDeps): BilledEndpoint {
  const conversations = createConversations(deps);
  return {
    name: 'responses',
    task: 'chat',
    path: '/chat/completions',
    admitsRateFirst: (request) =>
      request.body.previous_response_id !== undefined ||
      request.body.conversation !== undefined ||
      hasReferences(request.body.input),
    validate(body, config) {
      const details = responsesRequestErrors(body, config.translation);
      if (details.length === 0) details.push(...referenceCountErrors(body.input, config.responses.maxReferences));
      if (details.length > 0) throw invalid(details);
    },
    begin: async (request, { translations, config }) =>
      responsesCall(request, conversations, translations, await conversations.load(request), config),
  };
}

/** One Responses request: its translation, with the earlier turns it continues, made once. */
function responsesCall(
  request: AuthorizedRequest,
  conversations: Conversations,
  translations: TranslationJsonCache,
  { input, earlier }: TurnInput,
  config: Pick<Config, 'streamCheckpoint'>,
): ProtocolCall {
  // Sent with every earlier turn: the bounds, the hold and the estimate are this body's, not the
  // client's alone.
  const chat = chatBodyOf(request.body, earlier, input);
  const earlierTurn = translations.reuse(request.caller.orgId, chat);
  keepCeilingWithinContext(chat, request.model.contextLength, translations.json);
  const streams = request.body.stream === true;
  // A JSON answer that may outgrow a checkpoint is assembled from the engine's stream too.
  const sent = sentBody(chat, streamedFromEngine(request, config, chat), translations.json);
  translations.keep(request.caller.orgId, chat, earlierTurn);
  const responseId = request.responseId ?? itemId('resp');
  const source = (): ResponsesStreamSource => ({
    body: request.body,
    names: toolNamesOf(request.body),
    id: responseId,
    model: request.clientModel,
  });
  return {
    responseId,
    bounded: chat,
    sentBytes: sent.bytes,
    bodyFor: (target) => sent.writtenFor(target.servedModelName),
    async answerOf(answer) {
      const { body, names, id, model } = source();
      const response = responseOf(answer, body, names, id, model);
      await conversations.keep(request, input, response);
      return response;
    },
    estimate: (answer) => ({
      promptTokens: estimateChatPromptTokens(chat, translations.json),
      completionTokens: answer ? estimateCompletionTokens(answer.choices) : 0,
    }),
    stream: streams
      ? (bounds) => responsesStreamWriter(source(), bounds, (response) => conversations.keep(request, input, response))
      : null,
  };
}

/**
 * A Responses stream as `relayBilledStream` relays it. Its last events are written when the stream
 * ends, before it is settled: the response is kept (or not) first, and `response.completed` says
 * whether it was.
 */
function responsesStreamWriter(
  source: ResponsesStreamSource,
  bounds: TokenBounds,
  keep: (response: Json) => Promise<void>,
): StreamWriter {
  const writer = new ResponsesWriter(source, bounds);
  let last: string | null = null;
  return {
    state: writer.state,
    usual: (chunk) => writer.usual(chunk),
    parsed: (chunk, choices) => writer.parsed(chunk, choices),
    engineError: () => null,
    events: { finish: () => last ?? writer.failure(), failure: () => last ?? writer.failure() },
    async ended(outcome) {
      if (outcome === 'done' && !writer.state.failed) {
        const closing = writer.closeItems();
        await keep(writer.finalResponse());
        last = closing + writer.completed();
      } else if (outcome === 'upstream_failed' || writer.state.failed) last = writer.failure();
      return last;
    },
    snapshot() {
      writer.closeItems();
      return writer.finalResponse();
    },
    // A Response is never cached (`cachesAnswers`); its events are kept with the request data.
    cacheable: true,
  };
}
