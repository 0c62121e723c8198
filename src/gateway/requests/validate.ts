import { type ErrorDetail, GatewayError } from '../../shared/http/errors.js';

const MESSAGE_ROLES = new Set(['system', 'user', 'assistant', 'tool', 'developer', 'function']);

/**
 * Checks what the gateway itself relies on in a chat request: `messages` and
 * `stream`. Every other parameter is the engine's to judge.
 */
export function validateChatRequest(body: Record<string, unknown>): void {
  const details: ErrorDetail[] = [];
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
        details.push({ field: `messages[${index}].role`, message: 'must be one of system, user, assistant, tool, developer' });
      }
      if (!('content' in message) && !(role === 'assistant' && 'tool_calls' in message)) {
        details.push({ field: `messages[${index}].content`, message: 'is required' });
      }
    });
  }
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') details.push({ field: 'stream', message: 'must be true or false' });
  if (streamOptions !== undefined && streamOptions !== null && (typeof streamOptions !== 'object' || Array.isArray(streamOptions))) {
    details.push({ field: 'stream_options', message: 'must be an object' });
  }
  if (details.length > 0) throw invalid(details);
}

/** `input` is a string, an array of strings, or token ids (an array of integers, or of arrays of them). */
export function validateEmbeddingsRequest(body: Record<string, unknown>): void {
  const { input } = body;
  const isTokens = (value: unknown) => Array.isArray(value) && value.length > 0 && value.every((t) => Number.isInteger(t));
  const valid =
    (typeof input === 'string' && input.length > 0) || (Array.isArray(input) && input.length > 0 && (input.every((item) => typeof item === 'string') || isTokens(input) || input.every(isTokens)));
  if (!valid) throw invalid([{ field: 'input', message: 'must be a non-empty string, an array of strings, or an array of token ids' }]);
}

function invalid(details: ErrorDetail[]): GatewayError {
  const message = details.map((d) => `${d.field} ${d.message}`).join('; ');
  return new GatewayError('invalid_request', `Invalid request: ${message}.`, { details });
}
