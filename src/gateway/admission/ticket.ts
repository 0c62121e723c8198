import type { AuthenticatedKey } from '../keys/service.js';
import type { Admission, AdmitRequest } from './gate.js';
import { type LimitHeaders, limitHeaders } from './headers.js';

/** What an admitted request holds until `release`. */
export interface Ticket {
  requestId: string;
  caller: AuthenticatedKey;
  /** X-RateLimit-* headers for the response. */
  headers: LimitHeaders;
  estimatedTokens: number;
  holdNanos: bigint | null;
  month: string;
  tokensWindowEndsAt: number;
  /** The budget counts it was admitted under (`budgetTag`); '' when none. */
  budgetTag: string;
  released: boolean;
}

/** An admitted request's ticket, with its X-RateLimit-* headers when limits are on. */
export function ticketOf(
  ask: AdmitRequest,
  caller: AuthenticatedKey,
  admission: Extract<Admission, { outcome: 'admitted' }>,
): Ticket {
  const headers = ask.limits
    ? limitHeaders(
        { limit: caller.requestsPerMinute, ...admission.requests },
        admission.tokens && caller.tokensPerMinute !== null
          ? { limit: caller.tokensPerMinute, ...admission.tokens }
          : undefined,
      )
    : {};
  return {
    requestId: ask.requestId,
    caller,
    headers,
    estimatedTokens: ask.estimatedTokens,
    holdNanos: ask.holdNanos,
    month: ask.month,
    tokensWindowEndsAt: admission.tokensWindowEndsAt,
    budgetTag: admission.budgetTag,
    released: false,
  };
}
