import { costOf, type TokenPrice } from './money.js';
import type { TokenUsage } from './token-usage.js';
import { type BoundedRequest, clampUsage, type TokenBounds, tokenBoundsOf } from './token-bounds.js';

type Price = TokenPrice;

/**
 * The most a request can cost, held on the wallet while it runs so that concurrent requests cannot
 * spend the same money: its token bounds (see `token-bounds.ts`) at its model's prices, every
 * prompt token at the uncached input price (no cached-input price is above it, `admin/schemas.ts`).
 * An upper bound, not a guess: the charge is clamped to the same bounds, so it never exceeds the
 * hold. The reservation (`reserve`, `requests/authorize.ts`) takes its hold from here.
 *
 * @example
 * holdFor({ bodyBytes: 120, body: { max_tokens: 50 }, task: 'chat', contextLength: 8192 }, { inputPerToken: 150n, outputPerToken: 600n }).holdNanos;
 * // 120n * 150n + 50n * 600n = 48_000n
 */
export function holdFor(request: BoundedRequest, price: Price): { bounds: TokenBounds; holdNanos: bigint } {
  const bounds = tokenBoundsOf(request);
  return { bounds, holdNanos: costOf(bounds, price) };
}

/** What a call is charged: the engine's usage held to the request's bounds, at the model's prices. */
export interface Charge {
  usage: TokenUsage;
  /** How far the reported usage was over the bounds (null: it was within them). */
  excess: TokenUsage | null;
  costNanos: bigint;
}

/**
 * The charge for a call's reported usage, the other half of `holdFor`: the
 * usage is clamped to the bounds the hold was computed from, so the cost is
 * at most the hold (the `min` states the rule once more, should the two ever
 * part). `requests/billed-call.ts`'s `settle` makes it durable.
 *
 * @example
 * const hold = holdFor({ bodyBytes: 120, body: { max_tokens: 50, n: 8 }, task: 'chat', contextLength: 8192 }, price);
 * chargeFor({ promptTokens: 12, completionTokens: 400 }, hold, price).costNanos; // 12n * in + 400n * out
 */
export function chargeFor(
  reported: TokenUsage,
  hold: { bounds: TokenBounds; holdNanos: bigint },
  price: Price,
): Charge {
  const { usage, excess } = clampUsage(reported, hold.bounds);
  const cost = costOf(usage, price);
  return { usage, excess, costNanos: cost < hold.holdNanos ? cost : hold.holdNanos };
}
