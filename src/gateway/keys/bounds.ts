// A key's bounds, defined once: the operator API's body (`settings.ts`), the portal's form
// and the CLI's options all check against these. No imports: the CLI bundles this file, and
// zod (90 ms of its start) stays out of `dist/cli/main.js`.

/** The spec's expiry choices. */
export const KEY_EXPIRIES = ['never', '7d', '30d', '90d', '1y'] as const;
export type KeyExpiry = (typeof KEY_EXPIRIES)[number];

/** The longest name a key may have. */
export const KEY_NAME_MAX = 200;

/**
 * The highest value of each limit (every limit is at least 1; a token limit may also be null,
 * unlimited).
 */
export const KEY_LIMIT_MAX = {
  requests_per_minute: 1_000_000,
  max_concurrency: 1_000_000,
  // An int4 column.
  tokens_per_minute: 2_147_483_647,
  // A bigint column read as a JS number.
  monthly_tokens: Number.MAX_SAFE_INTEGER,
} as const;
