import { pickModel, requestedModelName } from '../../catalog/service.js';
import { estimateChatPromptTokens } from '../../proxy/token-counts.js';
import { GatewayError } from '../../../shared/http/errors.js';
import type { BilledDeps } from '../endpoint.js';

type Json = Record<string, unknown>;

/**
 * `count_tokens`: the prompt's tokens as the gateway estimates them (about four characters a token,
 * plus the chat template's few a message, plus the tools' definitions at four characters a token),
 * for a chat model of the catalog. An estimate, not the engine's tokenizer: clients use it to
 * decide when to compact a conversation, and the bill always uses the engine's count. Free (no
 * budget refuses it), but counted against the key's requests per minute and concurrency, and its
 * body bounded (`surfaces/v1/messages.ts`).
 */
export async function countTokens(
  deps: Pick<BilledDeps, 'requestPathCache'>,
  body: Json,
  chatOf: (body: Json) => Json,
): Promise<number> {
  const name = requestedModelName(body.model);
  const { model } = pickModel(await deps.requestPathCache.modelMatches(name), name);
  if (model.taskType !== 'chat')
    throw new GatewayError('model_not_found', `The model \`${name}\` is an embedding model.`);
  return estimateChatPromptTokens(chatOf(body));
}
