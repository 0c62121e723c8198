import type { TokenUsage } from '../billing/token-usage.js';

type Json = Record<string, unknown>;

/**
 * The usage an OpenAI-style answer shows its client, when the engine's object says anything but
 * what the call is billed for (`billed`: the engine's counts held to the request's bounds,
 * `billing/token-bounds.ts`'s `clampUsage`, or the gateway's estimate when the engine reported none
 * valid): then the billed counts in OpenAI's shape (`prompt_tokens`, `total_tokens`,
 * `completion_tokens`, and `prompt_tokens_details.cached_tokens` and
 * `completion_tokens_details.reasoning_tokens` where the engine gave details or the count is not
 * 0). Null when the engine's object is already exactly that, the usual case: the answer is relayed
 * as the engine wrote it.
 *
 * @example
 * shownUsage({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 }, { promptTokens: 5, completionTokens: 2 }); // null
 * shownUsage({ prompt_tokens: 5, completion_tokens: 2, prompt_tokens_details: { cached_tokens: -50 } }, { promptTokens: 5, completionTokens: 2 });
 * // { prompt_tokens: 5, total_tokens: 7, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 0 } }
 */
export function shownUsage(engine: unknown, billed: TokenUsage): Json | null {
  const fields = typeof engine === 'object' && engine !== null && !Array.isArray(engine) ? (engine as Json) : null;
  if (fields && saysBilled(fields, billed)) return null;
  const usage: Json = {
    prompt_tokens: billed.promptTokens,
    total_tokens: billed.promptTokens + billed.completionTokens,
  };
  if (billed.completionTokens > 0 || fields?.completion_tokens !== undefined || fields === null)
    usage.completion_tokens = billed.completionTokens;
  if (billed.cachedTokens || isObject(fields?.prompt_tokens_details))
    usage.prompt_tokens_details = { cached_tokens: billed.cachedTokens ?? 0 };
  if (billed.reasoningTokens || isObject(fields?.completion_tokens_details))
    usage.completion_tokens_details = { reasoning_tokens: billed.reasoningTokens ?? 0 };
  return usage;
}

const MEMBERS: ReadonlySet<string> = new Set([
  'prompt_tokens',
  'completion_tokens',
  'total_tokens',
  'prompt_tokens_details',
  'completion_tokens_details',
]);

/**
 * Whether an engine's usage says the billed counts and nothing else (an absent or null detail is a
 * 0).
 */
function saysBilled(fields: Json, billed: TokenUsage): boolean {
  for (const name in fields) if (!MEMBERS.has(name)) return false;
  const completion = fields.completion_tokens ?? 0;
  return (
    fields.prompt_tokens === billed.promptTokens &&
    completion === billed.completionTokens &&
    (fields.total_tokens === undefined || fields.total_tokens === billed.promptTokens + billed.completionTokens) &&
    detailSays(fields.prompt_tokens_details, 'cached_tokens', billed.cachedTokens ?? 0) &&
    detailSays(fields.completion_tokens_details, 'reasoning_tokens', billed.reasoningTokens ?? 0)
  );
}

function detailSays(details: unknown, name: string, count: number): boolean {
  if (details === undefined || details === null) return count === 0;
  if (!isObject(details)) return false;
  const keys = Object.keys(details);
  if (keys.length === 0) return count === 0;
  return keys.length === 1 && keys[0] === name && details[name] === count;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
