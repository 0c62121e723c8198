import { Hono } from 'hono';
import { formatAmount } from '../../gateway/billing/money.js';
import { decodeCursor, encodeCursor, type UsageCursor } from '../../gateway/billing/usage-requests.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { csvLines } from '../../shared/http/csv.js';
import { describeError } from '../../shared/http/log.js';
import { textStream } from '../../shared/http/text-stream.js';
import { UsagePage } from './usage-pages.js';
import { readWindow } from './window.js';
import type { PortalSession } from './session.js';
import type { PortalDeps } from './deps.js';
import { chargesWritten } from '../fresh-charges.js';

/**
 * Usage (`/portal/usage`) and its CSV twin (`/portal/usage.csv`): totals,
 * by day, key, model and project, and the requests, for a month or a custom
 * window; mounted at `/` as its two paths are siblings.
 *
 * @example
 * portal.route('/', usageRoutes(deps, session));
 */
export function usageRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const usage = new Hono<GatewayEnv>();
  const projects = deps.projects;
  usage.get('/usage', chargesWritten(deps.applier), async (c) => {
    const actor = await session.signedIn(c);
    // What the page shows includes this process's latest charges (they reach the database just
    // after each answer).
    const { window, error } = readWindow(c.req.query());
    const scope = { orgId: actor.orgId, from: window.from, to: window.to };
    const after = decodeCursor(c.req.query('after') ?? '') ?? undefined;
    const [totals, days, byKey, byModel, byProject, page, keys, projectRows] = await Promise.all([
      deps.usageReports.totals(scope),
      deps.usageReports.groups(scope, 'day'),
      deps.usageReports.groups(scope, 'key'),
      deps.usageReports.groups(scope, 'model'),
      deps.usageReports.groups(scope, 'project'),
      deps.usageReports.requests({ ...scope, limit: 50, after }),
      deps.keys.list(actor.orgId),
      projects.list(actor, { offset: 0, limit: 100, sort: 'name' }),
    ]);
    return c.html(
      <UsagePage
        viewer={session.viewerOf(actor)}
        window={window}
        error={error}
        totals={totals}
        days={days}
        byKey={byKey}
        byModel={byModel}
        byProject={byProject}
        records={page.records}
        keyNames={new Map(keys.map((k) => [k.id, k.name]))}
        projectNames={new Map(projectRows.rows.map((p) => [p.id, p.name]))}
        olderHref={page.next ? `/portal/usage?${window.query}&after=${encodeCursor(page.next)}` : null}
        currency={deps.config.currency}
      />,
    );
  });

  usage.get('/usage.csv', chargesWritten(deps.applier), async (c) => {
    const actor = await session.signedIn(c);
    const { window } = readWindow(c.req.query());
    const keyNames = new Map((await deps.keys.list(actor.orgId)).map((k) => [k.id, k.name]));
    const scope = { orgId: actor.orgId, from: window.from, to: window.to };
    const currency = deps.config.currency;
    const columns = [
      'time_utc',
      'request_id',
      'key_id',
      'key_name',
      'project_id',
      'model',
      'endpoint',
      'status',
      'prompt_tokens',
      'completion_tokens',
      'cost',
      'currency',
      'cache_hit',
      // Added last, so the earlier columns keep their places: of prompt_tokens and of
      // completion_tokens.
      'cached_tokens',
      'reasoning_tokens',
      // The batch a request was a line of (empty for any other request), last for the same reason.
      'batch_id',
    ];
    // Read page by page as the client reads: a long window is never held whole in memory.
    const rows = usageCsvRows({ deps, scope, keyNames, currency }, (error) =>
      deps.log.error('usage CSV failed', { requestId: c.get('requestId'), ...describeError(error) }),
    );
    const name = `tollgate-usage-${window.from.toISOString().slice(0, 10)}-to-${new Date(window.to.getTime() - 86_400_000).toISOString().slice(0, 10)}.csv`;
    return c.body(textStream(csvLines(columns, rows)), 200, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="${name}"`,
    });
  });
  return usage;
}

/**
 * The window's requests as CSV rows, a thousand read at a time as they are asked for. A failure is
 * logged (the answer's status is sent already) and ends the download short.
 */
async function* usageCsvRows(
  {
    deps,
    scope,
    keyNames,
    currency,
  }: {
    deps: Pick<PortalDeps, 'usageReports'>;
    scope: { orgId: string; from: Date; to: Date };
    keyNames: Map<string, string>;
    currency: string;
  },
  failed: (error: unknown) => void,
): AsyncGenerator<unknown[]> {
  let after: UsageCursor | undefined;
  try {
    do {
      const page = await deps.usageReports.requests({ ...scope, limit: 1_000, after });
      for (const r of page.records) {
        yield [
          r.createdAt.toISOString(),
          r.id,
          r.keyId,
          keyNames.get(r.keyId) ?? '',
          r.projectId ?? '',
          r.modelId,
          r.endpoint,
          r.status,
          r.promptTokens,
          r.completionTokens,
          formatAmount(r.cost),
          currency,
          r.cacheHit,
          r.cachedTokens,
          r.reasoningTokens,
          r.batchId ?? '',
        ];
      }
      after = page.next ?? undefined;
    } while (after);
  } catch (error) {
    failed(error);
    throw error;
  }
}
