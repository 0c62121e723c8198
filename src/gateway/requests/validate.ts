import { type ErrorDetail, GatewayError } from '../../shared/http/errors.js';

const MESSAGE_ROLES: ReadonlySet<string> = new Set(['system', 'user', 'assistant', 'tool', 'developer', 'function']);

/**
 * Checks what the gateway itself relies on in a chat request: `messages`,
 * `stream`, and the counts its bill multiplies (`n`, `best_of`). Every other
 * parameter is the engine's to judge.
 */
export function validateChatRequest(body: Record<string, unknown>, maxChoices: number): void {
  const details: ErrorDetail[] = choiceCountErrors(body, maxChoices);
  const { messages, stream, stream_options: streamOptions } = body;
  if (!Array.isArray(messages) || messages.length === 0) {
    details.push({ field: 'messages', message: 'must be a non-empty array of messages' });
  } else {
    messages.forEach((message: unknown, index) => {
      if (typeof message !== 'object' || message === null || Array.isArray(message)) {
        details.push({ field: `messages[${index}]`, message: 'must be an object with role and content' });
        return;
      }
      const { role } = message as Record<string, unknown>;
      if (typeof role !== 'string' || !MESSAGE_ROLES.has(role)) {
        details.push({ field: `messages[${index}].role`, message: `must be one of ${[...MESSAGE_ROLES].join(', ')}` });
      }
      if (!('content' in message) && !(role === 'assistant' && 'tool_calls' in message)) {
        details.push({ field: `messages[${index}].content`, message: 'is required' });
      }
    });
  }
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean')
    details.push({ field: 'stream', message: 'must be true or false' });
  if (
    streamOptions !== undefined &&
    streamOptions !== null &&
    (typeof streamOptions !== 'object' || Array.isArray(streamOptions))
  ) {
    details.push({ field: 'stream_options', message: 'must be an object' });
  }
  if (details.length > 0) throw invalid(details);
}

/**
 * `n` and `best_of`, when sent, are integers from 1 to `TOLLGATE_MAX_CHOICES`.
 * The hold and the charge's bound count every sequence they ask for, so the
 * gateway must read them as the engine will: an engine that takes `"64"` or
 * `64.0` for 64 (pydantic does) would otherwise generate 64 choices held for
 * as one.
 */
function choiceCountErrors(body: Record<string, unknown>, maxChoices: number): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  for (const field of ['n', 'best_of']) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > maxChoices) {
      details.push({ field, message: `must be an integer from 1 to ${maxChoices} (TOLLGATE_MAX_CHOICES)` });
    }
  }
  return details;
}

/**
 * A completions request: `prompt` is a string, an array of strings, token ids
 * (an array of integers), or an array of arrays of them; `stream` a boolean;
 * `n` and `best_of` within `TOLLGATE_MAX_CHOICES`. `suffix`, `echo`,
 * `logprobs` and the rest are the engine's to judge.
 */
export function validateCompletionsRequest(body: Record<string, unknown>, maxChoices: number): void {
  const details = choiceCountErrors(body, maxChoices);
  if (promptsOf(body.prompt) === null)
    details.push({
      field: 'prompt',
      message:
        'must be a non-empty string, an array of strings, or token ids (an array of integers, or of arrays of them)',
    });
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean')
    details.push({ field: 'stream', message: 'must be true or false' });
  if (details.length > 0) throw invalid(details);
}

/**
 * A completions request's prompts, each a string or token ids; null when
 * `prompt` is none of the shapes the API allows. Each prompt is answered
 * with its own `n` choices, so the bill counts them.
 */
export function promptsOf(prompt: unknown): Array<string | number[]> | null {
  const isTokens = (value: unknown): value is number[] =>
    Array.isArray(value) && value.length > 0 && value.every((t) => Number.isSafeInteger(t));
  if (typeof prompt === 'string') return [prompt];
  if (!Array.isArray(prompt) || prompt.length === 0) return null;
  if (isTokens(prompt)) return [prompt];
  if (prompt.every((item) => typeof item === 'string') || prompt.every(isTokens)) return prompt;
  return null;
}

/**
 * `input` is a string, an array of strings, or token ids (an array of integers, or of arrays of
 * them).
 */
export function validateEmbeddingsRequest(body: Record<string, unknown>): void {
  const { input } = body;
  const isTokens = (value: unknown) =>
    Array.isArray(value) && value.length > 0 && value.every((t) => Number.isInteger(t));
  const valid =
    (typeof input === 'string' && input.length > 0) ||
    (Array.isArray(input) &&
      input.length > 0 &&
      (input.every((item) => typeof item === 'string') || isTokens(input) || input.every(isTokens)));
  if (!valid)
    throw invalid([
      { field: 'input', message: 'must be a non-empty string, an array of strings, or an array of token ids' },
    ]);
}

/** The 400 for a request the gateway refuses, each detail named in its message. */
export function invalid(details: ErrorDetail[]): GatewayError {
  const message = details.map((d) => `${d.field} ${d.message}`).join('; ');
  return new GatewayError('invalid_request', `Invalid request: ${message}.`, { details });
}
