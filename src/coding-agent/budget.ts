import { costOf, pricePerMillion } from '../gateway/billing/money.js';
import { money } from './cost.js';
import type { Gateway, Price } from './gateway.js';
import type { AgentLimits } from './limits.js';
import { AgentStop } from './model.js';

/** What one model call may use: its `max_tokens`, and the most it can cost (the gateway's hold). */
export interface TurnPlan {
  maxTokens: number;
  /**
   * The most prompt tokens the gateway counts for it: the body's bytes (its charge is clamped to
   * both).
   */
  promptBound: number;
  /** Null when the gateway lists no price for the model. */
  worstNanos: bigint | null;
  /** The wallet planned with, or null when the gateway does not report it. */
  balanceNanos: bigint | null;
}

/** `max_tokens` written with this many digits at most: the body's bytes are measured with it in. */
const MAX_TOKENS_PLACEHOLDER = 9_999_999;

/**
 * The bytes of the body as model.ts sends it (the SDK writes it with JSON.stringify): the gateway's
 * prompt bound.
 */
function bodyBytes(body: Record<string, unknown>, maxTokens: number): number {
  return Buffer.byteLength(
    JSON.stringify({ ...body, max_tokens: maxTokens, stream: true, stream_options: { include_usage: true } }),
  );
}

/**
 * Money first: before each model call the agent knows the wallet and the
 * call's worst case, computed as the gateway computes its hold (the body's
 * bytes at the input price, `max_tokens` at the output price:
 * `gateway/billing/token-bounds.ts`). `max_tokens` is the smallest of
 * `max_output_tokens`, what is left of the model's context, and what the
 * wallet can pay after the prompt; a call the wallet cannot pay
 * `min_output_tokens` of is not started. The hold never exceeds the wallet,
 * and a charge never exceeds its hold, so the agent's calls never take the
 * wallet below zero.
 *
 * @example
 * const plan = await guard.plan(body, { contextLength: 8192, promptTokens: 1200, spentNanos: 0n, price });
 * body.max_tokens = plan.maxTokens;
 */
export class WalletGuard {
  /**
   * The last balance the gateway reported, and the one planned with then, at what the session had
   * spent.
   */
  private last: { reported: bigint; planned: bigint; spent: bigint } | null = null;
  private warned = false;

  constructor(
    private readonly gateway: Gateway,
    private readonly limits: AgentLimits,
    readonly warnNanos: bigint,
    readonly currency: string,
  ) {}

  async plan(
    body: Record<string, unknown>,
    call: { contextLength: number | null; promptTokens: number | null; spentNanos: bigint; price: Price | undefined },
  ): Promise<TurnPlan> {
    const bytes = bodyBytes(body, MAX_TOKENS_PLACEHOLDER);
    const floor = Math.min(this.limits.min_output_tokens, this.limits.max_output_tokens);
    // What is left of the context, but never under the floor: a full context is compaction's
    // business. Before a call measured the prompt, 2 bytes a token: more tokens than text of any
    // usual kind makes.
    const promptTokens = call.promptTokens ?? Math.ceil(bytes / 2);
    const contextLeft = call.contextLength === null ? Infinity : call.contextLength - promptTokens;
    let maxTokens = Math.min(this.limits.max_output_tokens, Math.max(floor, contextLeft));
    const balance = await this.balance(call.spentNanos);
    if (!call.price) return { maxTokens, promptBound: bytes, worstNanos: null, balanceNanos: balance };
    const price = { inputPerToken: call.price.inputNanosPerToken, outputPerToken: call.price.outputNanosPerToken };
    const promptNanos = costOf({ promptTokens: bytes, completionTokens: 0 }, price);
    if (balance !== null) {
      const left = balance - promptNanos;
      const affordable =
        price.outputPerToken === 0n ? BigInt(maxTokens) : left < 0n ? -1n : left / price.outputPerToken;
      if (affordable < BigInt(floor)) throw new AgentStop(this.cannotPay(bytes, floor, price, balance), 'wallet');
      if (affordable < BigInt(maxTokens)) maxTokens = Number(affordable);
    }
    return {
      maxTokens,
      promptBound: bodyBytes(body, maxTokens),
      worstNanos: costOf({ promptTokens: bytes, completionTokens: maxTokens }, price),
      balanceNanos: balance,
    };
  }

  /** A warning, once, when the wallet is below `wallet_warn`; null otherwise. */
  warning(balance: bigint | null): string | null {
    if (balance === null || balance >= this.warnNanos || this.warned) return null;
    this.warned = true;
    return `the wallet is low: ${money(balance, this.currency)} left, below ${money(this.warnNanos, this.currency)} (wallet_warn)`;
  }

  /**
   * The balance to plan with. Charges reach the wallet a moment after an
   * answer, so the last balance minus what the session spent since is
   * trusted when lower, unless the wallet rose (a top-up).
   */
  private async balance(spent: bigint): Promise<bigint | null> {
    const reported = await this.gateway.balance();
    if (reported === null) return null;
    let planned = reported;
    if (this.last) {
      const since = spent - this.last.spent;
      const expected = (reported > this.last.reported ? reported : this.last.planned) - since;
      if (expected < planned) planned = expected;
    }
    this.last = { reported, planned, spent };
    return planned;
  }

  private cannotPay(
    bytes: number,
    floor: number,
    price: { inputPerToken: bigint; outputPerToken: bigint },
    balance: bigint,
  ): string {
    const worst = costOf({ promptTokens: bytes, completionTokens: floor }, price);
    return (
      `not started: the wallet cannot pay for this turn. It may cost up to ${money(worst, this.currency)} ` +
      `(${bytes} bytes of conversation at ${pricePerMillion(price.inputPerToken)} per million tokens in, ` +
      `${floor} tokens out (min_output_tokens) at ${pricePerMillion(price.outputPerToken)} per million) ` +
      `and the wallet has ${money(balance, this.currency)}. ` +
      `Top up in the portal (Wallet), or ask your organization's admin; /clear or /compact makes turns cheaper.`
    );
  }
}
