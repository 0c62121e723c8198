/** A limit's state for headers: its size, what is used of it, and when its window resets. */
export interface LimitWindow {
  limit: number;
  used: number;
  resetMs: number;
}

export type LimitHeaders = Record<string, string>;

/**
 * The spec's X-RateLimit-Limit / X-RateLimit-Remaining (for requests per
 * minute) and X-RateLimit-Reset (seconds), plus OpenAI's names, which SDK
 * users' dashboards read: x-ratelimit-{limit,remaining,reset}-{requests,tokens}.
 *
 * @example
 * limitHeaders({ limit: 60, used: 1, resetMs: 59_000 });
 * // { 'X-RateLimit-Limit': '60', 'X-RateLimit-Remaining': '59', 'X-RateLimit-Reset': '59', … }
 */
export function limitHeaders(requests: LimitWindow, tokens?: LimitWindow): LimitHeaders {
  const headers: LimitHeaders = {
    'X-RateLimit-Limit': String(requests.limit),
    'X-RateLimit-Remaining': String(remaining(requests)),
    'X-RateLimit-Reset': String(Math.ceil(requests.resetMs / 1000)),
    'x-ratelimit-limit-requests': String(requests.limit),
    'x-ratelimit-remaining-requests': String(remaining(requests)),
    'x-ratelimit-reset-requests': `${Math.ceil(requests.resetMs / 1000)}s`,
  };
  if (tokens) {
    headers['x-ratelimit-limit-tokens'] = String(tokens.limit);
    headers['x-ratelimit-remaining-tokens'] = String(remaining(tokens));
    headers['x-ratelimit-reset-tokens'] = `${Math.ceil(tokens.resetMs / 1000)}s`;
  }
  return headers;
}

function remaining(window: LimitWindow): number {
  return Math.max(0, window.limit - window.used);
}

export function secondsUntilNextMonth(now: Date): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}
