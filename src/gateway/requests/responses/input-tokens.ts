import { pickModel, requestedModelName } from '../../catalog/service.js';
import { countChatPrompt } from '../../engines/prompt-count.js';
import { estimateChatPromptTokens } from '../../proxy/token-counts.js';
import { GatewayError } from '../../../shared/http/errors.js';
import type { BilledDeps } from '../endpoint.js';
import { invalid } from '../validate.js';
import { type ConversationDeps, createConversations, type TurnRequest } from './conversation.js';
import { referenceCountErrors } from './references.js';
import { chatBodyOf, responsesRequestErrors } from './translate.js';

type Json = Record<string, unknown>;

export type InputTokensDeps = ConversationDeps & Pick<BilledDeps, 'config' | 'requestPathCache' | 'fleet'>;

/**
 * `POST /v1/responses/input_tokens` (OpenAI's "Get input token counts"): the request's input
 * counted as the gateway bills it. The body is checked and translated as `POST /v1/responses`
 * translates it: its `item_reference`s resolved, the stored turns of `previous_response_id` or
 * `conversation` before it (a 404 or 400 as there), then the chat body's prompt tokenized by a
 * replica of the model's engine (`countChatPrompt`: its template, system prompt and tools
 * included), which is what the engine reports, and the gateway bills, for that body. When no
 * replica can count it (none ready, an engine kind that cannot tokenize, no answer within its
 * bound), the gateway's estimate, as a billed call uses when the engine reports nothing. Free: the
 * caller counts it against the key's limits.
 *
 * @example
 * const count = responsesInputTokens(deps);
 * await count({ requestId, caller, body: { model: 'm', input: 'Hi' } }); // 12
 */
export function responsesInputTokens(deps: InputTokensDeps): (request: TurnRequest) => Promise<number> {
  const conversations = createConversations(deps);
  return async (request) => {
    const { body } = request;
    const details = responsesRequestErrors(body, deps.config.translation);
    if (details.length === 0) details.push(...referenceCountErrors(body.input, deps.config.responses.maxReferences));
    if (details.length > 0) throw invalid(details);
    const name = requestedModelName(body.model);
    const { model } = pickModel(await deps.requestPathCache.modelMatches(name), name);
    if (model.taskType !== 'chat')
      throw new GatewayError('model_not_found', `The model \`${name}\` is an embedding model.`);
    const { input, earlier } = await conversations.load(request);
    const chat = chatBodyOf(body, earlier, input);
    return (await countedByEngine(deps, model.id, chat)) ?? estimateChatPromptTokens(chat);
  };
}

/**
 * The chat body's prompt as one ready replica of the model's engine tokenizes it; null when none
 * can.
 */
async function countedByEngine(deps: Pick<BilledDeps, 'fleet'>, modelId: string, chat: Json): Promise<number | null> {
  let target;
  try {
    // No replica is started for a count: an engine scaled to zero answers with the estimate.
    target = deps.fleet.acquire(modelId);
  } catch {
    return null;
  }
  try {
    return await countChatPrompt(target, { model: target.servedModelName, messages: chat.messages, tools: chat.tools });
  } finally {
    target.release();
  }
}
