import { estimateCompletionTokens, estimatePromptTokens } from '../../proxy/usage.js';
import type { BilledEndpoint } from '../endpoint.js';
import { invalid } from '../validate.js';
import { messageOf } from './answer.js';
import { messagesStreamWriter } from './stream.js';
import { chatBodyOf, messagesRequestErrors } from './translate.js';

type Json = Record<string, unknown>;

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
  validate(body) {
    const details = messagesRequestErrors(body);
    if (details.length > 0) throw invalid(details);
  },
  begin(request) {
    // The translation, made once: the bounds, the estimate and every replica tried read it.
    const chat = chatBodyOf(request.body);
    const streams = request.body.stream === true;
    return {
      bounded: chat,
      sentBytes: request.bodyBytes,
      bodyFor(target) {
        const body: Json = { ...chat, model: target.servedModelName };
        // Anthropic's max_tokens is a ceiling clients set whatever the model (Claude Code asks 32,000); vLLM refuses
        // one the context cannot hold. Past the room the prompt leaves, none is sent: the engine then stops at the
        // context's end.
        if ((chat.max_tokens as number) + estimatePromptTokens(chat.messages) >= request.model.contextLength)
          delete body.max_tokens;
        if (streams) body.stream_options = { include_usage: true, continuous_usage_stats: true };
        return body;
      },
      answerOf: (answer) => messageOf(answer, request.clientModel),
      estimate: (answer) => ({
        promptTokens: estimatePromptTokens(chat.messages),
        completionTokens: answer ? estimateCompletionTokens(answer.choices) : 0,
      }),
      stream: streams ? () => messagesStreamWriter(request.clientModel) : null,
    };
  },
};
