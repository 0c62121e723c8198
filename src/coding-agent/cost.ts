import { type Charge, chargeFor, holdFor } from '../gateway/billing/holds.js';
import { formatAmount, type TokenPrice } from '../gateway/billing/money.js';
import { clampUsage, type TokenBounds, tokenBoundsOf } from '../gateway/billing/token-bounds.js';
import type { TokenUsage } from '../gateway/billing/token-usage.js';
import type { Price } from './gateway.js';
import type { Session } from './sessions.js';

/** A chat call as the gateway received it: what its hold and its charge's bounds are computed from. */
export interface SentCall {
  /** The body as sent, `max_tokens` in. */
  body: Record<string, unknown>;
  /** Its bytes as sent (budget.ts's `promptBound`): the gateway's prompt bound. */
  bodyBytes: number;
  /**
   * The model's context length from `/v1/models`, the catalog's, which the gateway bounds by (null:
   * unknown).
   */
  contextLength: number | null;
}

/**
 * What a call cost: its usage held to its bounds, and its charge (null when the gateway lists no
 * price).
 */
export interface TurnCost {
  usage: TokenUsage;
  costNanos: bigint | null;
  /** The call's hold, the most it could have cost (null without a price). */
  holdNanos: bigint | null;
}

/**
 * A call's cost as the gateway bills it, by the gateway's own functions: its
 * hold and bounds (`billing/holds.ts`'s `holdFor`, from the body as sent),
 * and the engine's usage charged against them (`chargeFor`, `billing/money.ts`'s
 * `costOf`: cached prompt tokens at the cached-input price, reasoning as output,
 * never above the hold). So a turn's shown cost is its usage record's `cost_nanos`.
 *
 * @example
 * const { costNanos } = turnCost(answer.usage, { body, bodyBytes: plan.promptBound, contextLength: 8192 }, price);
 */
export function turnCost(reported: TokenUsage, sent: SentCall, price: Price | undefined): TurnCost {
  const hold = callHold(sent, price);
  const charge = turnCharge(reported, hold, price);
  return charge
    ? { usage: charge.usage, costNanos: charge.costNanos, holdNanos: hold.holdNanos }
    : { usage: clampUsage(reported, hold.bounds).usage, costNanos: null, holdNanos: null };
}

/**
 * The bounds and the hold of a sent call, as the gateway's billed request computes them
 * (`requests/authorize.ts`'s `reserve`).
 */
export function callHold(sent: SentCall, price: Price | undefined): { bounds: TokenBounds; holdNanos: bigint | null } {
  const request = {
    bodyBytes: sent.bodyBytes,
    body: sent.body,
    task: 'chat' as const,
    // Unknown here, the catalog's bound is the gateway's; the agent always sends max_tokens, the
    // tighter one.
    contextLength: sent.contextLength ?? Number.MAX_SAFE_INTEGER,
  };
  return price ? holdFor(request, tokenPriceOf(price)) : { bounds: tokenBoundsOf(request), holdNanos: null };
}

/**
 * A call's charge by the gateway's own rule (`billing/holds.ts`'s `chargeFor`): the engine's usage
 * held to the call's bounds (the body's bytes, its `max_tokens`), cached prompt tokens at the
 * cached-input price, reasoning as output, never above the hold. Null when the gateway lists no
 * price for the model.
 */
export function turnCharge(
  reported: TokenUsage,
  call: { bounds: TokenBounds; holdNanos: bigint | null },
  price: Price | undefined,
): Charge | null {
  if (!price || call.holdNanos === null) return null;
  return chargeFor(reported, { bounds: call.bounds, holdNanos: call.holdNanos }, tokenPriceOf(price));
}

/** The price as the gateway's billing reads it. */
export function tokenPriceOf(price: Price): TokenPrice {
  return {
    inputPerToken: price.inputNanosPerToken,
    cachedInputPerToken: price.cachedInputNanosPerToken,
    outputPerToken: price.outputNanosPerToken,
  };
}

/** Adds a call to the session's totals (its cost in nanos, as a string: JSON has no bigint). */
export function addToTotals(totals: Session['totals'], cost: TurnCost): void {
  totals.requests += 1;
  totals.promptTokens += cost.usage.promptTokens;
  totals.completionTokens += cost.usage.completionTokens;
  totals.costNanos = (BigInt(totals.costNanos) + (cost.costNanos ?? 0n)).toString();
}

/** `1234567n` → `0.001234567 USD`. */
export function money(nanos: bigint, currency: string): string {
  return `${formatAmount(nanos)} ${currency}`;
}
