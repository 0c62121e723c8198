import type { conversionRateView, rateCardView } from '../../admin/views.js';
import type { CostReport } from '../../../platform/costs/report.js';
import { UsageError } from '../errors.js';
import { segment } from '../client.js';
import { date, table } from '../output.js';
import { type Command, type List, STRING } from './command.js';

// `rate-cards list|add|delete`, `conversion-rates list|set|delete` and
// `costs report`: the operator's side of cost reports. Prices and rates are
// sent as the decimal strings typed; the gateway checks them.
//
// @example
// tollgate rate-cards add --profile a100x8 --currency USD --node-hour 2.50 --gpu-hour 0.40 --from
// 2026-11-01 tollgate conversion-rates set --base USD --quote EUR --date 2026-11-01 --rate 0.92
// tollgate costs report --month 2026-11

type RateCardView = ReturnType<typeof rateCardView>;
type ConversionRateView = ReturnType<typeof conversionRateView>;

const listCards: Command<List<RateCardView>> = {
  name: 'rate-cards list',
  args: '[--profile P]',
  summary: 'List rate cards (all, or one hardware profile’s).',
  options: { profile: STRING },
  request: (a) => ({ method: 'GET', path: `/rate-cards${query({ profile: a.optional('profile') })}` }),
  render: ({ data }) =>
    table([
      ['ID', 'PROFILE', 'CURRENCY', 'NODE-HOUR', 'GPU-HOUR', 'FROM', 'TO'],
      ...data.map((r) => [
        r.id,
        r.profile,
        r.currency,
        r.node_hour_price,
        r.gpu_hour_price,
        date(r.effective_from),
        date(r.effective_to, 'further notice'),
      ]),
    ]),
};

const addCard: Command<RateCardView> = {
  name: 'rate-cards add',
  args: '--profile P --currency USD --node-hour 2.50 --gpu-hour 0.40 --from DATE [--to DATE]',
  summary:
    'Price a hardware profile from a date (UTC midnight) or instant; an open-ended card ends the open-ended one before it.',
  options: { profile: STRING, currency: STRING, 'node-hour': STRING, 'gpu-hour': STRING, from: STRING, to: STRING },
  request: (a) => ({
    method: 'POST',
    path: '/rate-cards',
    body: {
      profile: a.required('profile'),
      currency: a.required('currency'),
      node_hour_price: a.required('node-hour'),
      gpu_hour_price: a.required('gpu-hour'),
      effective_from: a.required('from'),
      ...(a.has('to') ? { effective_to: a.required('to') } : {}),
    },
  }),
  render: (r) =>
    `Added rate card ${r.id}: ${r.profile} at ${r.node_hour_price} ${r.currency} a node-hour and ${r.gpu_hour_price} ${r.currency} a GPU-hour, from ${date(r.effective_from)} to ${date(r.effective_to, 'further notice')}.`,
};

const deleteCard: Command<null> = {
  name: 'rate-cards delete',
  args: 'ID',
  summary: 'Delete a rate card (reports price its usage again as if it never existed).',
  positionals: 1,
  request: (a) => ({ method: 'DELETE', path: `/rate-cards/${segment(a.id('rate card id'))}` }),
  render: (_, a) => `Deleted rate card ${a.id('rate card id')}.`,
};

const listRates: Command<List<ConversionRateView>> = {
  name: 'conversion-rates list',
  args: '[--base USD] [--quote EUR]',
  summary: 'List conversion rates by pair and date.',
  options: { base: STRING, quote: STRING },
  request: (a) => ({
    method: 'GET',
    path: `/conversion-rates${query({ base: a.optional('base'), quote: a.optional('quote') })}`,
  }),
  render: ({ data }) =>
    table([['BASE', 'QUOTE', 'FROM DATE', 'RATE'], ...data.map((r) => [r.base, r.quote, r.effective_on, r.rate])]),
};

const pairPath = (a: Parameters<Command['request']>[0]) => {
  const day = a.required('date');
  if (!/^\d{4}-\d\d-\d\d$/.test(day)) throw new UsageError(`--date must be a date as YYYY-MM-DD, not "${day}"`);
  return `/conversion-rates/${segment(a.required('base'))}/${segment(a.required('quote'))}/${day}`;
};

const setRate: Command<ConversionRateView> = {
  name: 'conversion-rates set',
  args: '--base USD --quote EUR --date YYYY-MM-DD --rate 0.92',
  summary: 'Set (or replace) how many QUOTE one BASE buys from a date on (UTC).',
  options: { base: STRING, quote: STRING, date: STRING, rate: STRING },
  request: (a) => ({ method: 'PUT', path: pairPath(a), body: { rate: a.required('rate') } }),
  render: (r) => `1 ${r.base} = ${r.rate} ${r.quote} from ${r.effective_on}.`,
};

const deleteRate: Command<null> = {
  name: 'conversion-rates delete',
  args: '--base USD --quote EUR --date YYYY-MM-DD',
  summary: 'Delete a conversion rate.',
  options: { base: STRING, quote: STRING, date: STRING },
  request: (a) => ({ method: 'DELETE', path: pairPath(a) }),
  render: (_, a) => `Deleted the ${a.required('base')}/${a.required('quote')} rate of ${a.required('date')}.`,
};

const report: Command<CostReport> = {
  name: 'costs report',
  args: '[--month YYYY-MM | --from DATE --to DATE] [--org ID]',
  summary: 'Cost report of every organization (or one) for a month (default: this one) or a window.',
  options: { month: STRING, from: STRING, to: STRING, org: STRING },
  request: (a) => ({
    method: 'GET',
    path: `/costs${query({ month: a.optional('month'), from: a.optional('from'), to: a.optional('to'), org_id: a.optional('org') })}`,
  }),
  render: (r) => {
    const amounts = (list: { currency: string; amount: string }[]) =>
      list.map((x) => `${x.amount} ${x.currency}`).join(' + ') || '-';
    const rows = r.organizations.flatMap((org) =>
      org.line_items.map((item) => [
        org.org_name,
        item.cluster_name,
        item.profile,
        item.node_hours,
        item.gpu_hours,
        item.unrated_hours,
        item.amount === null
          ? 'unrated'
          : `${item.amount} ${item.currency}${item.conversion_skipped ? ' (not converted: no rate)' : ''}`,
      ]),
    );
    const totals = `Total: ${amounts(r.totals.amounts)}; ${r.totals.node_hours} node-hours, ${r.totals.gpu_hours} GPU-hours, ${r.totals.unrated_hours} unrated hours.`;
    return `Costs from ${r.window.from} to ${r.window.to} (amounts rounded ${r.rounding}):\n${table([['ORGANIZATION', 'CLUSTER', 'PROFILE', 'NODE-HOURS', 'GPU-HOURS', 'UNRATED', 'AMOUNT'], ...rows])}\n${totals}`;
  },
};

/** `?a=1&b=2` of the given values, or '' when none is set. */
function query(values: Record<string, string | undefined>): string {
  const params = new URLSearchParams(
    Object.entries(values).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  return params.size > 0 ? `?${params.toString()}` : '';
}

export const costCommands = [listCards, addCard, deleteCard, listRates, setRate, deleteRate, report];
