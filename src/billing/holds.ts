import type { TaskType } from '../db/schema.js';

/**
 * The most a request can cost, held on the wallet while it runs so that
 * concurrent requests cannot spend the same money. An upper bound, not a
 * guess: a prompt has at most as many tokens as the request body has bytes
 * (byte-level BPE tokens are at least one byte, and the JSON around the text
 * outweighs the chat template's tokens), and a completion at most
 * `max_completion_tokens` / `max_tokens`, or else the model's context length.
 * (Images given by URL to a vision model are the exception: their tokens are
 * not bounded by the URL's bytes.)
 *
 * @example
 * holdAmount({ bodyBytes: 120, body: { max_tokens: 50 }, task: 'chat', contextLength: 8192 }, { inputPerToken: 150n, outputPerToken: 600n });
 * // 120n * 150n + 50n * 600n = 48_000n
 */
export function holdAmount(
  request: { bodyBytes: number; body: Record<string, unknown>; task: TaskType; contextLength: number },
  price: { inputPerToken: bigint; outputPerToken: bigint },
): bigint {
  const completion = request.task === 'embedding' ? 0 : completionCap(request.body, request.contextLength);
  return BigInt(request.bodyBytes) * price.inputPerToken + BigInt(completion) * price.outputPerToken;
}

function completionCap(body: Record<string, unknown>, contextLength: number): number {
  const asked = [body.max_completion_tokens, body.max_tokens].find((v): v is number => Number.isSafeInteger(v) && (v as number) > 0);
  return Math.min(asked ?? contextLength, contextLength);
}
