import { streamedFromEngine } from '../engine-stream.js';
import { estimateChatPromptTokens, estimateCompletionTokens } from '../../proxy/token-counts.js';
import type { BilledEndpoint } from '../endpoint.js';
import { keepCeilingWithinContext, sentBody } from '../sent-body.js';
import { invalid } from '../validate.js';
import { messageOf } from './answer.js';
import { messagesStreamWriter } from './stream.js';
import { chatBodyOf, messagesRequestErrors } from './translate.js';

/**
 * Anthropic's Messages (`POST /v1/messages`), JSON or SSE, translated to the
 * engine's chat completions (`translate.ts` says why) and the answer back
 * (`answer.ts`, `stream.ts`). Billed from the engine's usage exactly as chat
 * is: the hold from `max_tokens` and the bytes of the body the engine is
 * sent, the charge from the engine's count, a stream cut short from its
 * running count.
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
  begin(request, { translations, config }) {
    // The translation, made once: the bounds, the hold, the estimate and every replica tried read
    // what it sends.
    const chat = chatBodyOf(request.body);
    const earlier = translations.reuse(request.caller.orgId, chat);
    keepCeilingWithinContext(chat, request.model.contextLength, translations.json);
    const streams = request.body.stream === true;
    // A JSON answer that may outgrow a checkpoint is assembled from the engine's stream too.
    const sent = sentBody(chat, streamedFromEngine(request, config, chat), translations.json);
    translations.keep(request.caller.orgId, chat, earlier);
    return {
      bounded: chat,
      sentBytes: sent.bytes,
      bodyFor: (target) => sent.writtenFor(target.servedModelName),
      answerOf: (answer) => messageOf(answer, request.clientModel),
      estimate: (answer) => ({
        promptTokens: estimateChatPromptTokens(chat, translations.json),
        completionTokens: answer ? estimateCompletionTokens(answer.choices) : 0,
      }),
      stream: streams ? (bounds) => messagesStreamWriter(request.clientModel, bounds) : null,
    };
  },
};
