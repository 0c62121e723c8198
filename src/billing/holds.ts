import { costOf } from './money.js';
import { type BoundedRequest, tokenBoundsOf } from './token-bounds.js';

/**
 * The most a request can cost, held on the wallet while it runs so that
 * concurrent requests cannot spend the same money: its token bounds (see
 * `token-bounds.ts`) at its model's prices. An upper bound, not a guess: the
 * charge is clamped to the same bounds, so it never exceeds the hold.
 *
 * @example
 * holdAmount({ bodyBytes: 120, body: { max_tokens: 50 }, task: 'chat', contextLength: 8192 }, { inputPerToken: 150n, outputPerToken: 600n });
 * // 120n * 150n + 50n * 600n = 48_000n
 */
export function holdAmount(request: BoundedRequest, price: { inputPerToken: bigint; outputPerToken: bigint }): bigint {
  return costOf(tokenBoundsOf(request), price);
}
