import type { Config } from '../../../config/types.js';
import { streamedFromEngine } from '../engine-stream.js';
import type { ChatJsonMemo } from '../../proxy/chat-json.js';
import { estimateChatPromptTokens, estimateCompletionTokens, usageFrom } from '../../proxy/token-counts.js';
import type { ErrorDetail } from '../../../shared/http/errors.js';
import { ownedItemId } from '../../stored-responses/ids.js';
import type { AuthorizedRequest } from '../authorize.js';
import type { BilledEndpoint, ProtocolCall } from '../endpoint.js';
import { keepCeilingWithinContext, sentBody } from '../sent-body.js';
import { invalid } from '../validate.js';
import { itemId, responsesUsage } from './answer.js';
import { COMPACTION_PROMPT, compactionContent } from './compaction-item.js';
import { type ConversationDeps, createConversations, type TurnInput } from './conversation.js';
import { hasReferences, referenceCountErrors } from './references.js';
import { chatBodyOf, responsesRequestErrors } from './translate.js';

type Json = Record<string, unknown>;

/**
 * `POST /v1/responses/compact` (OpenAI's "Compact a response"), as Codex CLI calls it when a
 * session nears its context window: the conversation so far (`input`, or `previous_response_id`'s
 * chain and `input`), compacted by the engine into a summary. The answer is a
 * `response.compaction`: the user's messages as they were, then one `compaction` item carrying
 * the summary (`compaction-item.ts`), which the client sends as the next turn's input in place of
 * the history. One engine call, billed like a turn (the engine's counts, on the key, within its
 * limits); nothing is stored.
 *
 * @example
 * routes.post('/compact', (c) => serveBilled(c, deps, compactEndpoint({ store, log })));
 */
export function compactEndpoint(deps: ConversationDeps): BilledEndpoint {
  const conversations = createConversations(deps);
  return {
    name: 'responses.compact',
    task: 'chat',
    path: '/chat/completions',
    admitsRateFirst: (request) => request.body.previous_response_id !== undefined || hasReferences(request.body.input),
    validate(body, config) {
      const details = compactErrors(body);
      const turn = withInput(body);
      if (details.length === 0) details.push(...responsesRequestErrors(turn, config.translation));
      if (details.length === 0) details.push(...referenceCountErrors(turn.input, config.responses.maxReferences));
      if (details.length > 0) throw invalid(details);
    },
    async begin(request, { translations, config }) {
      const turn = { ...request, body: withInput(request.body) };
      return compactCall(turn, await conversations.load(turn), translations.json, config);
    },
  };
}

/** `input` may be absent or null with `previous_response_id` (OpenAI's schema): no new items. */
function withInput(body: Json): Json {
  return body.input === undefined || body.input === null ? { ...body, input: [] } : body;
}

/**
 * What the compaction has no use for is refused, not ignored: it answers once, as JSON, at once,
 * and reads no conversation (OpenAI's body has none of these).
 */
function compactErrors(body: Json): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  for (const field of ['stream', 'background'])
    if (body[field] === true) details.push({ field, message: 'is not supported by /v1/responses/compact' });
  if (body.conversation !== undefined && body.conversation !== null)
    details.push({ field: 'conversation', message: 'is not supported by /v1/responses/compact' });
  const noInput = body.input === undefined || body.input === null;
  if (noInput && typeof body.previous_response_id !== 'string')
    details.push({ field: 'input', message: 'is required without previous_response_id: there is nothing to compact' });
  return details;
}

function compactCall(
  request: AuthorizedRequest,
  { input, earlier }: TurnInput,
  json: ChatJsonMemo,
  config: Pick<Config, 'streamCheckpoint'>,
): ProtocolCall {
  // The conversation as a turn would send it, tools left out (the summary calls none), and the
  // request to compact it after it.
  const body = request.body;
  const chat = chatBodyOf({ model: body.model, instructions: body.instructions }, earlier, input);
  if (body.max_output_tokens !== undefined && body.max_output_tokens !== null) chat.max_tokens = body.max_output_tokens;
  (chat.messages as Json[]).push({ role: 'user', content: COMPACTION_PROMPT });
  keepCeilingWithinContext(chat, request.model.contextLength, json);
  // Streamed from the engine when it may outgrow a checkpoint, its answer assembled from the
  // chunks.
  const sent = sentBody(chat, streamedFromEngine(request, config, chat), json);
  const responseId = request.responseId ?? itemId('resp');
  return {
    responseId,
    bounded: chat,
    sentBytes: sent.bytes,
    bodyFor: (target) => sent.writtenFor(target.servedModelName),
    answerOf: (answer) => compactionOf(answer, [...(earlier ?? []), ...input], responseId),
    estimate: (answer) => ({
      promptTokens: estimateChatPromptTokens(chat, json),
      completionTokens: answer ? estimateCompletionTokens(answer.choices) : 0,
    }),
    stream: null,
  };
}

/**
 * The engine's summary as OpenAI's `response.compaction`: the user's messages kept (what they
 * asked, in their words), then the compaction item (an earlier compaction's summary was in what
 * the engine summarized); the usage the engine reported, as billed.
 */
function compactionOf(answer: Json, items: Json[], responseId: string): Json {
  const choice = ((answer.choices as Json[] | undefined) ?? [])[0] ?? {};
  const message = (choice.message ?? {}) as Json;
  const summary = typeof message.content === 'string' ? message.content : '';
  const output: Json[] = items
    .filter((item) => item.type === 'message' && item.role === 'user')
    .map((item) => userMessage(item, responseId));
  output.push({
    id: ownedItemId('cmp', responseId),
    type: 'compaction',
    encrypted_content: compactionContent(summary),
  });
  return {
    id: responseId,
    object: 'response.compaction',
    created_at: Math.floor(Date.now() / 1000),
    output,
    usage: responsesUsage(usageFrom(answer.usage)),
  };
}

/** A user's message as an output item: its text and images as input parts. */
function userMessage(item: Json, responseId: string): Json {
  const content =
    typeof item.content === 'string'
      ? [{ type: 'input_text', text: item.content }]
      : (item.content as Json[]).filter((part) => part.type === 'input_text' || part.type === 'input_image');
  return { id: ownedItemId('msg', responseId), type: 'message', status: 'completed', role: 'user', content };
}
