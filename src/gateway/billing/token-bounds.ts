import type { TaskType } from '../../shared/db/schema.js';
import type { TokenUsage } from './token-usage.js';

/**
 * The most tokens a request can use: what its hold is computed from, and what a charge is clamped
 * to.
 */
export type TokenBounds = Pick<TokenUsage, 'promptTokens' | 'completionTokens'>;

/** What the hold and the clamp need to know of a request. */
export interface BoundedRequest {
  bodyBytes: number;
  body: Record<string, unknown>;
  task: TaskType;
  /** The model's context length in the catalog. */
  contextLength: number;
}

/**
 * The most a request can use, from the request alone:
 * - prompt: the body's size in bytes, since a text token is at least one byte
 *   and the JSON around the text outweighs the chat template; a chat request
 *   that carries images, audio or video (which a URL or base64 does not
 *   bound) may fill the whole context, so its prompt bound is at least the
 *   context length;
 * - completion: `max_completion_tokens` or `max_tokens`, else the context
 *   length, and never more than the context length, for each sequence the
 *   engine generates (`sequencesOf`); embeddings generate none.
 *
 * @example
 * tokenBoundsOf({ bodyBytes: 120, body: { max_tokens: 50 }, task: 'chat', contextLength: 8192 });
 * // { promptTokens: 120, completionTokens: 50 }
 * tokenBoundsOf({ bodyBytes: 120, body: { max_tokens: 50, n: 8 }, task: 'chat', contextLength: 8192 });
 * // { promptTokens: 120, completionTokens: 400 }
 */
export function tokenBoundsOf(request: BoundedRequest): TokenBounds {
  if (request.task === 'embedding') return { promptTokens: request.bodyBytes, completionTokens: 0 };
  const prompt = carriesMedia(request.body.messages)
    ? Math.max(request.bodyBytes, request.contextLength)
    : request.bodyBytes;
  return {
    promptTokens: prompt,
    completionTokens: completionCap(request.body, request.contextLength) * sequencesOf(request.body),
  };
}

/**
 * How many sequences the engine generates for a request, each up to the
 * completion cap long: `n`, or `best_of` when larger (vLLM generates
 * `best_of` sequences and returns the best `n`; beam search's width is
 * `n`). The engine's usage then counts every choice's tokens, and so must
 * the hold. A value that is not a positive integer counts as one: the
 * gateway refuses such requests before this (`requests/validate.ts`), since
 * an engine may read `"8"` as 8.
 *
 * @example
 * sequencesOf({ n: 4, best_of: 6 }); // 6
 */
export function sequencesOf(body: Record<string, unknown>): number {
  return Math.max(positiveInteger(body.n) ?? 1, positiveInteger(body.best_of) ?? 1);
}

function positiveInteger(value: unknown): number | undefined {
  return Number.isSafeInteger(value) && (value as number) > 0 ? (value as number) : undefined;
}

/**
 * Holds an engine's reported usage to the request's bounds. An engine that
 * reports more than the request could have used (a bug, or a hostile
 * engine) is charged for the bound, never more; `excess` says by how much it
 * was over, for the log and the metric. The cached and reasoning counts stay
 * within their (clamped) totals.
 *
 * @example
 * clampUsage({ promptTokens: 10, completionTokens: 1e9 }, { promptTokens: 200, completionTokens: 10 });
 * // { usage: { promptTokens: 10, completionTokens: 10 }, excess: { promptTokens: 0, completionTokens: 999999990 } }
 */
export function clampUsage(
  reported: TokenUsage,
  bounds: TokenBounds,
): { usage: TokenUsage; excess: TokenBounds | null } {
  const usage: TokenUsage = {
    promptTokens: Math.min(reported.promptTokens, bounds.promptTokens),
    completionTokens: Math.min(reported.completionTokens, bounds.completionTokens),
  };
  if (reported.cachedTokens) usage.cachedTokens = Math.min(reported.cachedTokens, usage.promptTokens);
  if (reported.reasoningTokens) usage.reasoningTokens = Math.min(reported.reasoningTokens, usage.completionTokens);
  const excess = {
    promptTokens: reported.promptTokens - usage.promptTokens,
    completionTokens: reported.completionTokens - usage.completionTokens,
  };
  return { usage, excess: excess.promptTokens > 0 || excess.completionTokens > 0 ? excess : null };
}

function completionCap(body: Record<string, unknown>, contextLength: number): number {
  const asked = [body.max_completion_tokens, body.max_tokens].map(positiveInteger).find((v) => v !== undefined);
  return Math.min(asked ?? contextLength, contextLength);
}

const MEDIA_PARTS: ReadonlySet<string> = new Set(['image_url', 'input_image', 'input_audio', 'audio_url', 'video_url']);

/**
 * True when a message has a content part that is not text (its tokens are not bounded by its
 * bytes).
 */
function carriesMedia(messages: unknown): boolean {
  if (!Array.isArray(messages)) return false;
  return messages.some((message) => {
    const content = (message as { content?: unknown } | null)?.content;
    return (
      Array.isArray(content) &&
      content.some((part) => MEDIA_PARTS.has((part as { type?: unknown } | null)?.type as string))
    );
  });
}
