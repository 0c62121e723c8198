import type { Redis } from 'ioredis';
import { GatewayError } from '../http/errors.js';
import type { KeyLimits } from '../keys/service.js';
import { type ConcurrencyLimiter, createMemoryConcurrency, createRedisConcurrency, type Slot } from './concurrency.js';
import { createWindowCounter, type WindowCounter } from './counters.js';
import { type LimitHeaders, limitHeaders, monthKey, secondsUntilNextMonth } from './headers.js';

/** What a request took from its key's limits; given back, or settled, exactly once. */
export interface LimitLease {
  /** Headers for the response: X-RateLimit-* and OpenAI's x-ratelimit-*-requests/-tokens. */
  headers: LimitHeaders;
  /**
   * Replaces the token estimate with the tokens really used, and frees the
   * concurrency slot. Call once, when the request ends however it ends.
   */
  settle(actualTokens: number): Promise<void>;
  /** Gives back everything the request took, its request count included: it was refused by a later check. */
  cancel(): Promise<void>;
}

export interface KeyLimiterOptions {
  redis: Redis | null;
  prefix: string;
  concurrencyLeaseMs: number;
  /** The key's tokens so far this calendar month from the usage records; read when a month's counter starts. */
  monthToDate(keyId: string, monthStart: Date): Promise<number>;
}

/**
 * The spec's four per-key limits, checked in order: requests per minute,
 * concurrency, tokens per minute, monthly tokens. A request refused by one
 * gives back what the earlier ones took, so refusals count against nothing.
 *
 * @example
 * const limiter = createKeyLimiter({ redis: null, prefix: 'tollgate:', concurrencyLeaseMs: 30_000, monthToDate });
 * const lease = await limiter.admit('key_1', limits, 600);
 * await lease.settle(412);
 */
export function createKeyLimiter(options: KeyLimiterOptions) {
  const { redis, prefix } = options;
  const requests = createWindowCounter({ redis, prefix: `${prefix}rpm`, durationSec: 60 });
  const tokens = createWindowCounter({ redis, prefix: `${prefix}tpm`, durationSec: 60 });
  // Keys carry the month, so a new month starts from zero; the window only bounds how long a count is kept.
  // In memory it must stay under Node's 24.8-day timer limit; a count dropped mid-month is rebuilt from the usage records.
  const monthly = createWindowCounter({ redis, prefix: `${prefix}month`, durationSec: (redis ? 32 : 20) * 24 * 3600 });
  const concurrency: ConcurrencyLimiter = redis
    ? createRedisConcurrency(redis, `${prefix}conc:`, options.concurrencyLeaseMs)
    : createMemoryConcurrency();

  async function admit(keyId: string, limits: KeyLimits, estimatedTokens: number): Promise<LimitLease> {
    const undo: Array<() => Promise<void> | void> = [];
    const refuse = async (error: GatewayError): Promise<never> => {
      await Promise.all(undo.map((step) => Promise.resolve(step()).catch(() => {})));
      throw error;
    };
    try {
      const rpm = await requests.add(keyId, 1);
      undo.push(() => requests.subtract(keyId, 1));
      const requestWindow = { limit: limits.requestsPerMinute, used: rpm.total, resetMs: rpm.msBeforeNext };
      if (rpm.total > limits.requestsPerMinute) {
        await refuse(tooMany('rate_limit_exceeded', `This key allows ${limits.requestsPerMinute} requests per minute.`, rpm.msBeforeNext, requestWindow, requestWindow));
      }

      const { slot, inFlight } = await concurrency.acquire(keyId, limits.maxConcurrency);
      if (!slot) {
        const window = { limit: limits.maxConcurrency, used: inFlight, resetMs: 1000 };
        await refuse(tooMany('concurrency_limit_exceeded', `This key allows ${limits.maxConcurrency} requests in flight at once.`, 1000, window, requestWindow));
      }
      undo.push(() => slot!.release());

      let tokenWindow: { limit: number; used: number; resetMs: number } | undefined;
      let tokensTaken: { at: number; msBeforeNext: number } | undefined;
      if (limits.tokensPerMinute !== null) {
        const tpm = await tokens.add(keyId, estimatedTokens);
        undo.push(() => tokens.subtract(keyId, estimatedTokens));
        tokenWindow = { limit: limits.tokensPerMinute, used: tpm.total, resetMs: tpm.msBeforeNext };
        if (tpm.total > limits.tokensPerMinute) {
          const message = `This key allows ${limits.tokensPerMinute} tokens per minute; this request may use up to ${estimatedTokens}.`;
          await refuse(tooMany('tokens_limit_exceeded', message, tpm.msBeforeNext, { ...tokenWindow, used: tpm.total - estimatedTokens }, requestWindow));
        }
        tokensTaken = { at: Date.now(), msBeforeNext: tpm.msBeforeNext };
      }

      const monthStart = startOfMonth(new Date());
      const monthCounter = `${keyId}:${monthKey(monthStart)}`;
      if (limits.monthlyTokens !== null) {
        let month = await monthly.add(monthCounter, estimatedTokens);
        undo.push(() => monthly.subtract(monthCounter, estimatedTokens));
        // A month's counter starts empty (new month, or a store that lost it): add what the usage records already hold.
        if (month.created) {
          const recorded = await options.monthToDate(keyId, monthStart);
          if (recorded > 0) month = await monthly.add(monthCounter, recorded);
        }
        if (month.total > limits.monthlyTokens) {
          const retryMs = secondsUntilNextMonth(new Date()) * 1000;
          const window = { limit: limits.monthlyTokens, used: month.total - estimatedTokens, resetMs: retryMs };
          await refuse(tooMany('monthly_quota_exceeded', `This key's monthly limit of ${limits.monthlyTokens} tokens is reached.`, retryMs, window, requestWindow));
        }
      }

      let settled = false;
      return {
        headers: limitHeaders(requestWindow, tokenWindow),
        async cancel() {
          if (settled) return;
          settled = true;
          await Promise.all(undo.map((step) => Promise.resolve(step()).catch(() => {})));
        },
        async settle(actualTokens) {
          if (settled) return;
          settled = true;
          slot!.release();
          const delta = actualTokens - estimatedTokens;
          if (delta === 0) return;
          const adjust = (counter: WindowCounter, key: string) => (delta > 0 ? counter.add(key, delta) : counter.subtract(key, -delta));
          const steps: Promise<unknown>[] = [];
          // A refund only within the window it was taken in: a new window never goes below zero.
          if (tokensTaken && (delta > 0 || Date.now() < tokensTaken.at + tokensTaken.msBeforeNext)) steps.push(adjust(tokens, keyId));
          if (limits.monthlyTokens !== null && (delta > 0 || monthKey(startOfMonth(new Date())) === monthKey(monthStart))) steps.push(adjust(monthly, monthCounter));
          // Settling after the response: a failure here must not fail the request.
          await Promise.allSettled(steps);
        },
      };
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      await Promise.all(undo.map((step) => Promise.resolve(step()).catch(() => {})));
      throw new GatewayError('limits_unavailable', 'The gateway cannot check rate limits right now. Retry with backoff.', {
        headers: { 'Retry-After': '1' },
        cause: error,
      });
    }
  }

  return { admit };
}

export type KeyLimiter = ReturnType<typeof createKeyLimiter>;

/** A lease that takes nothing: limits switched off (TOLLGATE_LIMITS=off). */
export const UNLIMITED_LEASE: LimitLease = { headers: {}, settle: async () => {}, cancel: async () => {} };

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

function startOfMonth(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

export type { Slot };
