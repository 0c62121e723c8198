import { GatewayError } from '../../shared/http/errors.js';
import type { AuthenticatedKey } from '../keys/service.js';
import type { Admission } from './gate.js';
import type { BudgetLimit } from './budgets.js';
import { formatAmount } from '../billing/money.js';
import { limitHeaders, secondsUntilNextMonth } from './headers.js';

/**
 * A Redis that came back empty, in its rebuild grace: 503 until every replica has reported its
 * holds.
 */
export function rebuilding(retryMs: number): GatewayError {
  return new GatewayError(
    'billing_unavailable',
    'The gateway is rebuilding wallet balances after a restart of its limits store. Retry shortly.',
    {
      headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryMs / 1000))) },
    },
  );
}

/** 402: nothing spendable is left once the holds of requests in flight are taken. */
export function insufficientFunds(): GatewayError {
  return new GatewayError(
    'insufficient_funds',
    'The wallet balance is zero or negative, or held by requests in flight. Top up the wallet to continue.',
  );
}

/**
 * 429 `budget_exceeded`: the request's hold does not fit in what is left of a budget of its key or
 * its project this month (or day). It says which budget, and when its window resets
 * (`X-Budget-Reset`, an ISO time, and `Retry-After`); a request asking for fewer tokens
 * (`max_tokens`) holds less and may fit. `limit` is the budget's limit as the gate read it (the one
 * last set, which this replica may not know yet).
 */
export function budgetExceeded(budget: BudgetLimit, spent: bigint, hold: bigint, limit: bigint): GatewayError {
  const resetsAt = new Date(budget.endsAt).toISOString();
  const left = limit > spent ? limit - spent : 0n;
  const window = budget.window === 'month' ? 'monthly' : 'daily';
  const retryAfter = Math.max(1, Math.ceil((budget.endsAt - Date.now()) / 1000));
  return new GatewayError(
    'budget_exceeded',
    `This ${budget.scope}'s ${window} budget of ${formatAmount(limit)} has ${formatAmount(left)} left ` +
      `(charges and requests in flight), and this request may cost up to ${formatAmount(hold)}. ` +
      `It resets at ${resetsAt}; a request with a lower max_tokens holds less.`,
    {
      headers: {
        'Retry-After': String(retryAfter),
        'X-Budget-Scope': budget.scope,
        'X-Budget-Window': budget.window,
        'X-Budget-Reset': resetsAt,
      },
      details: [
        { field: 'budget', message: `${budget.scope} ${budget.subjectId} ${budget.window}` },
        { field: 'budget_limit', message: formatAmount(limit) },
        { field: 'budget_remaining', message: formatAmount(left) },
        { field: 'resets_at', message: resetsAt },
      ],
    },
  );
}

/**
 * The gate still answers `wallet_unknown` or `month_unknown` after the rebuild and the seed `admit`
 * tries: 503, retry later.
 */
export function billingUnavailable(): GatewayError {
  return new GatewayError('billing_unavailable', 'The gateway cannot check billing right now. Retry with backoff.', {
    headers: { 'Retry-After': '1' },
  });
}

/**
 * A gate or store that fails or does not answer: 503 `limits_unavailable`, retry later (the billed
 * path's own `unavailableOnFailure` in `requests/authorize.ts` raises `billing_unavailable`).
 */
export async function limitsUnavailableOnFailure<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    throw new GatewayError(
      'limits_unavailable',
      'The gateway cannot check rate limits right now. Retry with backoff.',
      {
        headers: { 'Retry-After': '1' },
        cause: error,
      },
    );
  }
}

/**
 * The 429 of the limit an admission was refused by, with that limit's X-RateLimit-* headers and
 * Retry-After.
 */
export function refusal(
  admission: Exclude<
    Admission,
    {
      outcome:
        | 'admitted'
        | 'wallet_unknown'
        | 'month_unknown'
        | 'rebuilding'
        | 'insufficient_funds'
        | 'budget_exceeded'
        | 'budget_unknown';
    }
  >,
  caller: AuthenticatedKey,
  estimate: number,
): GatewayError {
  const requestWindow = { limit: caller.requestsPerMinute, ...admission.requests };
  switch (admission.outcome) {
    case 'rate_limit_exceeded':
      return tooMany(
        admission.outcome,
        `This key allows ${caller.requestsPerMinute} requests per minute.`,
        admission.requests.resetMs,
        requestWindow,
        requestWindow,
      );
    case 'concurrency_limit_exceeded': {
      const window = { limit: caller.maxConcurrency, used: admission.inFlight, resetMs: 1000 };
      return tooMany(
        admission.outcome,
        `This key allows ${caller.maxConcurrency} requests in flight at once.`,
        1000,
        window,
        requestWindow,
      );
    }
    case 'tokens_limit_exceeded': {
      const limit = caller.tokensPerMinute!;
      const window = { limit, used: admission.tokens.used - estimate, resetMs: admission.tokens.resetMs };
      return tooMany(
        admission.outcome,
        `This key allows ${limit} tokens per minute; this request may use up to ${estimate}.`,
        admission.tokens.resetMs,
        window,
        requestWindow,
      );
    }
    case 'monthly_quota_exceeded': {
      const retryMs = secondsUntilNextMonth(new Date()) * 1000;
      const window = { limit: caller.monthlyTokens!, used: admission.used, resetMs: retryMs };
      return tooMany(
        admission.outcome,
        `This key's monthly limit of ${caller.monthlyTokens} tokens is reached.`,
        retryMs,
        window,
        requestWindow,
      );
    }
  }
}

/**
 * A 429: the request window's headers, with X-RateLimit-Limit and -Remaining those of the limit
 * that was `exceeded`.
 */
function tooMany(
  code: 'rate_limit_exceeded' | 'concurrency_limit_exceeded' | 'tokens_limit_exceeded' | 'monthly_quota_exceeded',
  message: string,
  retryAfterMs: number,
  exceeded: { limit: number; used: number; resetMs: number },
  requestWindow: { limit: number; used: number; resetMs: number },
): GatewayError {
  const retryAfter = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new GatewayError(code, `${message} Retry after ${retryAfter} s.`, {
    headers: {
      ...limitHeaders(requestWindow),
      'Retry-After': String(retryAfter),
      'X-RateLimit-Limit': String(exceeded.limit),
      'X-RateLimit-Remaining': String(Math.max(0, exceeded.limit - exceeded.used)),
    },
  });
}
