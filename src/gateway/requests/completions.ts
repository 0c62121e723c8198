import { estimateCompletionTokens, estimateInputTokens } from '../proxy/token-counts.js';
import { sequencesOf } from '../billing/token-bounds.js';
import { openAiCall } from './chat.js';
import type { BilledEndpoint } from './endpoint.js';
import { promptsOf, validateCompletionsRequest } from './validate.js';

/**
 * Completions (the legacy `/v1/completions`), JSON or SSE: what editors'
 * code completion sends, with the model's own fill-in-the-middle template in
 * the prompt. The body goes to the engine's `/v1/completions` as the client
 * wrote it (`suffix`, `echo`, `logprobs` included: an engine that refuses
 * one, as vLLM refuses `suffix`, says so in its 400), streams with usage
 * switched on as for chat.
 */
export const COMPLETIONS: BilledEndpoint = {
  name: 'completions',
  task: 'chat',
  path: '/completions',
  validate: (body, config) => validateCompletionsRequest(body, config.maxChoices),
  begin: (request, deps) =>
    openAiCall(request, deps.config, {
      bounded: completionsBounds(request.body),
      estimate: (answer) => ({
        promptTokens: estimateInputTokens(request.body.prompt),
        completionTokens: answer ? textTokens(answer.choices) : 0,
      }),
    }),
};

/**
 * What the token bounds read of a completions request: every prompt is
 * answered with its own `n` choices (`best_of` when larger), so the
 * sequences are their product; each prompt's text for the token limits'
 * estimate. The prompt's own bound stays the body's bytes.
 */
function completionsBounds(body: Record<string, unknown>): Record<string, unknown> {
  const prompts = promptsOf(body.prompt) ?? [];
  return {
    max_tokens: body.max_tokens,
    n: sequencesOf(body) * Math.max(1, prompts.length),
    messages: prompts.map((prompt) => ({ content: typeof prompt === 'string' ? prompt : '' })),
  };
}

/**
 * A completions answer's generated text, about four characters a token, for an engine that reported
 * no usage.
 */
function textTokens(choices: unknown): number {
  if (!Array.isArray(choices)) return 0;
  return estimateCompletionTokens(
    choices.map((choice) => ({ message: { content: (choice as { text?: unknown } | null)?.text } })),
  );
}
