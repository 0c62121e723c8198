import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { readQuery } from '../../shared/http/validate.js';
import { formatAmount } from '../../gateway/billing/money.js';
import {
  USAGE_GROUPINGS,
  type UsageGroup,
  type UsageScope,
  type UsageTotals,
} from '../../gateway/billing/usage-reports.js';
import { decodeCursor, encodeCursor, type UsageRecord } from '../../gateway/billing/usage-requests.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { V1Deps } from './deps.js';
import { requireKey } from '../../gateway/requests/auth.js';
import { chargesWritten } from '../fresh-charges.js';

// Unknown parameters are ignored (z.object strips them); every known one is checked.
const instant = z.string().transform((text, ctx) => {
  const at = parseInstant(text);
  if (at) return at;
  ctx.addIssue({
    code: 'custom',
    message: 'Must be an ISO 8601 date (2026-01-31) or date-time with an offset (2026-01-31T12:00:00Z), from 1970 on.',
  });
  return z.NEVER;
});
const id = z
  .string()
  .trim()
  .min(1)
  .max(200)
  // The control characters are what this pattern is about: an id may not hold one.
  // eslint-disable-next-line no-control-regex
  .regex(/^[^\x00-\x1f\x7f]*$/, 'Must not contain control characters.')
  .optional();
const scopeFields = { from: instant.optional(), to: instant.optional(), key_id: id, project_id: id, model: id };

const summaryQuery = z.object({ ...scopeFields, group_by: z.enum(USAGE_GROUPINGS).optional() });
const requestsQuery = z.object({
  ...scopeFields,
  limit: z
    .string()
    .regex(/^\d{1,6}$/, 'Must be a whole number.')
    .transform(Number)
    .pipe(z.int().min(1).max(500))
    .default(50),
  after: z
    .string()
    .transform((text, ctx) => {
      const cursor = decodeCursor(text);
      if (cursor) return cursor;
      ctx.addIssue({ code: 'custom', message: 'Must be a next_cursor from a previous page.' });
      return z.NEVER;
    })
    .optional(),
});

/**
 * GET /v1/usage/summary: the caller's organization's totals in a window,
 * optionally grouped; the operator's `/admin/v1/usage/summary` answers the
 * same for one organization or all (`orgId` null).
 */
export async function usageSummary(
  c: Context<GatewayEnv>,
  deps: Pick<V1Deps, 'usageReports' | 'config'>,
  orgId: string | null,
): Promise<Response> {
  const query = readQuery(c, summaryQuery);
  const scope = scopeOf(orgId, query);
  const [totals, groups] = await Promise.all([
    deps.usageReports.totals(scope),
    query.group_by ? deps.usageReports.groups(scope, query.group_by) : Promise.resolve([]),
  ]);
  return c.json({
    object: 'usage.summary',
    from: scope.from.toISOString(),
    to: scope.to.toISOString(),
    currency: deps.config.currency,
    group_by: query.group_by ?? null,
    totals: totalsView(totals),
    data: groups.map(groupView),
  });
}

/**
 * GET /v1/usage/requests: the caller's organization's usage records, newest first, a page at a
 * time.
 */
async function usageRequestList(c: Context<GatewayEnv>, deps: V1Deps): Promise<Response> {
  const query = readQuery(c, requestsQuery);
  const page = await deps.usageReports.requests({
    ...scopeOf(c.get('caller').orgId, query),
    limit: query.limit,
    after: query.after,
  });
  return c.json({
    object: 'list',
    data: page.records.map(recordView),
    has_more: page.hasMore,
    next_cursor: page.next ? encodeCursor(page.next) : null,
  });
}

/**
 * The caller's organization, always (the operator's: the one asked for, or all); the window
 * defaults to this calendar month (UTC) so far.
 */
function scopeOf(orgId: string | null, query: z.output<typeof summaryQuery | typeof requestsQuery>): UsageScope {
  const now = new Date();
  const from = query.from ?? new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const to = query.to ?? now;
  if (from.getTime() >= to.getTime()) {
    const message = `Must be before to (${to.toISOString()}); without from, the window starts at ${from.toISOString()}.`;
    throw new GatewayError('invalid_request', 'Invalid query parameters.', { details: [{ field: 'from', message }] });
  }
  return { orgId, from, to, keyId: query.key_id, projectId: query.project_id, model: query.model };
}

function totalsView(totals: UsageTotals) {
  return {
    requests: totals.requests,
    cache_hits: totals.cacheHits,
    prompt_tokens: totals.promptTokens,
    completion_tokens: totals.completionTokens,
    total_tokens: totals.promptTokens + totals.completionTokens,
    ...tokenDetails(totals),
    cost: formatAmount(totals.cost),
    cost_nanos: totals.cost.toString(),
  };
}

/**
 * The parts of the counts, in OpenAI's convention: the cached prompt tokens (read from the engine's
 * prefix cache, billed at the cached-input price) are inside `prompt_tokens`, the reasoning tokens
 * inside `completion_tokens`.
 */
function tokenDetails(counts: { cachedTokens: number; reasoningTokens: number }) {
  return {
    prompt_tokens_details: { cached_tokens: counts.cachedTokens },
    completion_tokens_details: { reasoning_tokens: counts.reasoningTokens },
  };
}

function groupView(group: UsageGroup) {
  switch (group.by) {
    case 'model':
      return { model: group.model, ...totalsView(group) };
    case 'key':
      return { key_id: group.keyId, key_name: group.keyName, ...totalsView(group) };
    case 'key_model':
      return { key_id: group.keyId, key_name: group.keyName, model: group.model, ...totalsView(group) };
    case 'project':
      return { project_id: group.projectId, ...totalsView(group) };
    case 'day':
      return { date: group.date, ...totalsView(group) };
  }
}

function recordView(record: UsageRecord) {
  return {
    id: record.id,
    object: 'usage.request' as const,
    created_at: record.createdAt.toISOString(),
    key_id: record.keyId,
    project_id: record.projectId,
    model: record.modelId,
    endpoint: record.endpoint,
    prompt_tokens: record.promptTokens,
    completion_tokens: record.completionTokens,
    total_tokens: record.promptTokens + record.completionTokens,
    ...tokenDetails(record),
    cost: formatAmount(record.cost),
    cost_nanos: record.cost.toString(),
    status: record.status,
    streamed: record.streamed,
    usage_source: record.usageSource,
    latency_ms: record.latencyMs,
    ttft_ms: record.ttftMs,
    cache_hit: record.cacheHit,
    batch_id: record.batchId,
  };
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const isoDate = z.iso.date();
const isoDateTime = z.iso.datetime({ offset: true });

/** `2026-01-31` is that day's midnight UTC; a date-time must say its offset (`Z` or `+02:00`). */
function parseInstant(text: string): Date | null {
  if (DATE.test(text) ? !isoDate.safeParse(text).success : !isoDateTime.safeParse(text).success) return null;
  const at = new Date(DATE.test(text) ? `${text}T00:00:00Z` : text);
  // PostgreSQL has no year 0; nothing is recorded before 1970 anyway.
  return Number.isNaN(at.getTime()) || at.getUTCFullYear() < 1970 ? null : at;
}

/**
 * The key's usage: `GET /v1/usage/summary` and `GET /v1/usage/requests`.
 *
 * @example
 * v1.route('/usage', usageRoutes(deps));
 */
export function usageRoutes(deps: V1Deps): Hono<GatewayEnv> {
  const usage = new Hono<GatewayEnv>();
  const auth = requireKey(deps.keys);
  usage.get('/summary', auth, chargesWritten(deps.applier), (c) => usageSummary(c, deps, c.get('caller').orgId));
  usage.get('/requests', auth, chargesWritten(deps.applier), (c) => usageRequestList(c, deps));
  return usage;
}
