import { costOf } from './money.js';
import { type BoundedRequest, type TokenBounds, tokenBoundsOf } from './token-bounds.js';

/**
 * The most a request can cost, held on the wallet while it runs so that
 * concurrent requests cannot spend the same money: its token bounds (see
 * `token-bounds.ts`) at its model's prices. An upper bound, not a guess: the
 * charge is clamped to the same bounds, so it never exceeds the hold. The
 * admission (`requests/admission.ts`) takes its hold from here.
 *
 * @example
 * holdFor({ bodyBytes: 120, body: { max_tokens: 50 }, task: 'chat', contextLength: 8192 }, { inputPerToken: 150n, outputPerToken: 600n }).holdNanos;
 * // 120n * 150n + 50n * 600n = 48_000n
 */
export function holdFor(request: BoundedRequest, price: { inputPerToken: bigint; outputPerToken: bigint }): { bounds: TokenBounds; holdNanos: bigint } {
  const bounds = tokenBoundsOf(request);
  return { bounds, holdNanos: costOf(bounds, price) };
}
