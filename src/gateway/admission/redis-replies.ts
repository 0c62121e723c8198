import type { Admission, RateAnswer } from './gate.js';
import type { Reported } from './gate-state.js';

/** How the Redis gate's scripts' replies are read (`redis-gate.ts`), and how it writes their lists. */

/**
 * A script's HGETALL reply (request, amount, request, amount, …) as an organization's holds or
 * charges.
 */
export function pairs(orgId: string, flat: string[]): Reported[] {
  const out: Reported[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push({ orgId, requestId: flat[i]!, amount: BigInt(flat[i + 1]!) });
  return out;
}

/**
 * The admit script's reply as an admission: which number means what depends on the outcome (see
 * `ADMIT`'s returns).
 */
export function admissionFrom(reply: Array<string | number>): Admission {
  const [outcome, a, b, c, d] = reply as [string, number, number, number, number];
  switch (outcome) {
    case 'admitted':
      return {
        outcome,
        requests: { used: a, resetMs: b },
        tokens: c >= 0 ? { used: c, resetMs: d } : null,
        tokensWindowEndsAt: Number(reply[5]) + d,
        budgetTag: String(reply[6] ?? ''),
      };
    case 'rate_limit_exceeded':
      return { outcome, requests: { used: a, resetMs: b } };
    case 'concurrency_limit_exceeded':
      return { outcome, inFlight: a, requests: { used: b, resetMs: c } };
    case 'tokens_limit_exceeded':
      return { outcome, tokens: { used: a, resetMs: b }, requests: { used: c, resetMs: d } };
    case 'monthly_quota_exceeded':
      return { outcome, used: a, requests: { used: c, resetMs: d } };
    case 'budget_exceeded':
      return { outcome, index: a, spent: BigInt(b), limit: BigInt(c) };
    case 'budget_unknown':
      return { outcome, index: a };
    case 'insufficient_funds':
    case 'wallet_unknown':
    case 'month_unknown':
      return { outcome };
    case 'rebuilding':
      return { outcome, retryMs: a };
    default:
      throw new Error(`unexpected admission reply ${String(outcome)}`);
  }
}

/**
 * The rate script's reply (`ADMIT_RATE`): admitted, with the minute's count and when it ends, or
 * one of its two refusals.
 */
export function rateAnswerFrom(reply: Array<string | number>): RateAnswer {
  const [outcome, a, b, c] = reply as [string, number, number, number];
  switch (outcome) {
    case 'admitted':
      return { outcome, requests: { used: a, resetMs: b }, windowEndsAt: Number(c) + b };
    case 'rate_limit_exceeded':
      return { outcome, requests: { used: a, resetMs: b } };
    case 'concurrency_limit_exceeded':
      return { outcome, inFlight: a, requests: { used: b, resetMs: c } };
    default:
      throw new Error(`unexpected rate admission reply ${String(outcome)}`);
  }
}
