import { formatAmount } from '../../../gateway/billing/money.js';
import { UsageError } from '../errors.js';
import { table } from '../output.js';
import { type Command, STRING } from './command.js';

// `tollgate usage`: tokens and cost per key and model over a window, from
// `/usage/summary` (a key's own organization under /v1, or the operator's view
// of one organization or all under /admin/v1). Money is printed from the
// answer's integer nano-units (`cost_nanos`), never through a float.
//
// @example
// tollgate usage --from 2026-11-01 --to 2026-12-01
// tollgate usage --org org_… --from 2026-11-01
// TOLLGATE_API_KEY=sk-gw-… tollgate usage

interface UsageTotalsView {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  completion_tokens_details: { reasoning_tokens: number };
  cost_nanos: string;
}

/** What `/usage/summary?group_by=key_model` answers. */
export interface UsageSummaryView {
  object: 'usage.summary';
  from: string;
  to: string;
  currency: string;
  totals: UsageTotalsView;
  data: (UsageTotalsView & { key_id: string; key_name: string | null; model: string })[];
}

const cost = (nanos: string) => formatAmount(BigInt(nanos));

export const usageCommand: Command<UsageSummaryView> = {
  name: 'usage',
  args: '[--from DATE] [--to DATE] [--org ORG] [--api-key KEY]',
  summary:
    "Tokens and cost per key and model from --from (default: the 1st of this month, UTC) up to --to (default: now). With an API key (--api-key, else $TOLLGATE_API_KEY): the key's organization; with the operator token: every organization, or --org's.",
  options: { from: STRING, to: STRING, org: STRING, 'api-key': STRING },
  api: 'key-or-operator',
  request: (a) => {
    if (a.has('org') && a.has('api-key'))
      throw new UsageError('--org is for the operator token: an API key reports on its own organization');
    const query = new URLSearchParams({ group_by: 'key_model' });
    for (const [flag, name] of [
      ['from', 'from'],
      ['to', 'to'],
      ['org', 'org_id'],
    ] as const) {
      const value = a.optional(flag);
      if (value !== undefined) query.set(name, value);
    }
    return { method: 'GET', path: `/usage/summary?${query.toString()}` };
  },
  render: (usage) => {
    const row = (key: string, name: string, model: string, t: UsageTotalsView) => [
      key,
      name,
      model,
      String(t.requests),
      String(t.prompt_tokens),
      String(t.prompt_tokens_details.cached_tokens),
      String(t.completion_tokens),
      String(t.completion_tokens_details.reasoning_tokens),
      String(t.total_tokens),
      cost(t.cost_nanos),
    ];
    const rows = usage.data.map((g) => row(g.key_id, g.key_name ?? '-', g.model, g));
    // CACHED is of PROMPT (read from the engine's prefix cache), REASONING of COMPLETION.
    const header = ['KEY', 'NAME', 'MODEL', 'REQUESTS', 'PROMPT', 'CACHED', 'COMPLETION', 'REASONING', 'TOTAL'];
    header.push(`COST (${usage.currency})`);
    const body = rows.length > 0 ? [...rows, row('total', '', '', usage.totals)] : [];
    return `Usage from ${usage.from} to ${usage.to}:\n${table([header, ...body])}`;
  },
};
