import type { ConversionRateRow } from './conversion-rates.js';
import { rateInForce } from './conversion-rates.js';
import { minorUnits } from './currencies.js';
import { formatDecimal, formatMinor, formatScaled, parseDecimal, RATE_ONE, roundHalfEven } from './decimal.js';
import { clip, type MeteredAllocation, type Span, splitByCards } from './metering.js';
import type { RateCardRow } from './rate-cards.js';
import type { CostWindow } from './window.js';

/** Decimal places of the hours strings (the seconds beside them are exact). */
const HOURS_DIGITS = 6;
/** How amounts round, once per line: stated in every report. */
const ROUNDING = 'half-even';

export interface ReportOrg {
  id: string;
  name: string;
  billingCurrency: string | null;
}

export interface ReportInput {
  window: CostWindow;
  now: Date;
  allocations: readonly MeteredAllocation[];
  cards: readonly (RateCardRow & Span)[];
  conversionRates: readonly ConversionRateRow[];
  /**
   * The organizations shown, in order; every allocation's organization must be among them (others
   * are left out).
   */
  orgs: readonly ReportOrg[];
}

interface Quantities {
  node_seconds: number;
  node_hours: string;
  gpu_seconds: number;
  gpu_hours: string;
  unrated_seconds: number;
  unrated_hours: string;
}

export interface CostLineItem extends Quantities {
  cluster_id: string;
  cluster_name: string;
  cluster_state: 'running' | 'deleted';
  profile: string;
  gpus_per_node: number;
  charge_period_start: string;
  charge_period_end: string;
  rate_card: { id: string; currency: string; node_hour_price: string; gpu_hour_price: string } | null;
  amount: string | null;
  currency: string | null;
  native_amount: string | null;
  native_currency: string | null;
  conversion: { rate: string; effective_on: string } | null;
  conversion_skipped: boolean;
}

export interface Totals extends Quantities {
  /** One amount per currency, by code; several when lines stay in different currencies. */
  amounts: { currency: string; amount: string }[];
}

export interface OrgCosts {
  org_id: string;
  org_name: string;
  billing_currency: string | null;
  totals: Totals;
  line_items: CostLineItem[];
}

export interface CostReport {
  object: 'cost_report';
  window: { from: string; to: string; month: string | null };
  generated_at: string;
  rounding: typeof ROUNDING;
  totals: Totals;
  organizations: OrgCosts[];
}

interface Line {
  allocation: MeteredAllocation;
  card: (RateCardRow & Span) | null;
  nodeSeconds: number;
  gpuSeconds: number;
  start: number;
  end: number;
}

/**
 * The cost report of a window. Each node allocation is clipped to the window
 * (and to `now`, for nodes still running) in whole seconds, cut where rate
 * cards start and end, and summed into one line per cluster and rate card
 * (or per cluster without a card: unrated). A line's amount is the exact
 * fraction (node-seconds × node-hour price + GPU-seconds × GPU-hour price) /
 * 3600, times the conversion rate when converted, rounded once, half to
 * even, to the currency's minor units. Totals are sums of the rounded lines,
 * so every table adds up exactly.
 *
 * @example
 * const report = buildReport({ window, now: new Date(), allocations, cards, conversionRates, orgs });
 */
export function buildReport(input: ReportInput): CostReport {
  const window = { start: input.window.from.getTime() / 1000, end: input.window.to.getTime() / 1000 };
  const now = Math.floor(input.now.getTime() / 1000);
  const cardsOf = groupBy(input.cards, (card) => card.profile);
  const lines = new Map<string, Line>();
  for (const allocation of input.allocations) {
    const span = clip(allocation, window, now);
    if (!span) continue;
    for (const part of splitByCards(span, cardsOf.get(allocation.profile) ?? [])) {
      const key = `${allocation.clusterId}\u0000${part.card?.id ?? ''}`;
      const line = lines.get(key) ?? {
        allocation,
        card: part.card,
        nodeSeconds: 0,
        gpuSeconds: 0,
        start: part.span.start,
        end: part.span.end,
      };
      const seconds = part.span.end - part.span.start;
      line.nodeSeconds += seconds;
      line.gpuSeconds += seconds * allocation.gpusPerNode;
      line.start = Math.min(line.start, part.span.start);
      line.end = Math.max(line.end, part.span.end);
      lines.set(key, line);
    }
  }
  const linesOf = groupBy([...lines.values()], (line) => line.allocation.orgId);
  const organizations = input.orgs.map((org): OrgCosts => {
    const items = (linesOf.get(org.id) ?? [])
      .sort(
        (a, b) =>
          a.allocation.clusterName.localeCompare(b.allocation.clusterName) ||
          a.allocation.clusterId.localeCompare(b.allocation.clusterId) ||
          a.start - b.start,
      )
      .map((line) => lineItem(line, org.billingCurrency, input.conversionRates));
    return {
      org_id: org.id,
      org_name: org.name,
      billing_currency: org.billingCurrency,
      totals: totalsOf(items),
      line_items: items,
    };
  });
  return {
    object: 'cost_report',
    window: { from: isoOf(window.start), to: isoOf(window.end), month: input.window.month },
    generated_at: isoOf(now),
    rounding: ROUNDING,
    totals: totalsOf(organizations.map((org) => org.totals)),
    organizations,
  };
}

function lineItem(line: Line, billingCurrency: string | null, rates: readonly ConversionRateRow[]): CostLineItem {
  const { allocation, card } = line;
  const base = {
    cluster_id: allocation.clusterId,
    cluster_name: allocation.clusterName,
    cluster_state: allocation.clusterState,
    profile: allocation.profile,
    gpus_per_node: allocation.gpusPerNode,
    charge_period_start: isoOf(line.start),
    charge_period_end: isoOf(line.end),
    ...quantities(line.nodeSeconds, line.gpuSeconds, card ? 0 : line.nodeSeconds),
  };
  if (!card)
    return {
      ...base,
      rate_card: null,
      amount: null,
      currency: null,
      native_amount: null,
      native_currency: null,
      conversion: null,
      conversion_skipped: false,
    };
  // The exact amount is numerator / denominator in the card's currency units.
  const nodePrice = parseDecimal(card.nodeHourPrice);
  const gpuPrice = parseDecimal(card.gpuHourPrice);
  const numerator = BigInt(line.nodeSeconds) * nodePrice + BigInt(line.gpuSeconds) * gpuPrice;
  const denominator = 3600n * RATE_ONE;
  const nativeDigits = minorUnits(card.currency);
  const native = formatMinor(roundHalfEven(numerator * 10n ** BigInt(nativeDigits), denominator), nativeDigits);
  const rateCard = {
    id: card.id,
    currency: card.currency,
    node_hour_price: formatDecimal(nodePrice),
    gpu_hour_price: formatDecimal(gpuPrice),
  };
  const priced = (
    amount: string,
    currency: string,
    conversion: CostLineItem['conversion'],
    skipped: boolean,
  ): CostLineItem => ({
    ...base,
    rate_card: rateCard,
    amount,
    currency,
    native_amount: native,
    native_currency: card.currency,
    conversion,
    conversion_skipped: skipped,
  });
  if (billingCurrency === null || billingCurrency === card.currency) return priced(native, card.currency, null, false);
  // The rate in force on the last day the line covers.
  const rate = rateInForce(rates, card.currency, billingCurrency, isoOf(line.end - 1).slice(0, 10));
  if (!rate) return priced(native, card.currency, null, true);
  const digits = minorUnits(billingCurrency);
  const converted = roundHalfEven(numerator * parseDecimal(rate.rate) * 10n ** BigInt(digits), denominator * RATE_ONE);
  return priced(
    formatMinor(converted, digits),
    billingCurrency,
    { rate: formatDecimal(parseDecimal(rate.rate)), effective_on: rate.effectiveOn },
    false,
  );
}

/** Sums of quantities and, per currency, of rounded amounts (in minor units: exact). */
function totalsOf(
  parts: readonly (Quantities &
    ({ amounts: Totals['amounts'] } | { amount: string | null; currency: string | null }))[],
): Totals {
  let node = 0;
  let gpu = 0;
  let unrated = 0;
  const minor = new Map<string, bigint>();
  const add = (currency: string, amount: string) =>
    minor.set(currency, (minor.get(currency) ?? 0n) + BigInt(amount.replace('.', '')));
  for (const part of parts) {
    node += part.node_seconds;
    gpu += part.gpu_seconds;
    unrated += part.unrated_seconds;
    if ('amounts' in part) for (const { currency, amount } of part.amounts) add(currency, amount);
    else if (part.amount !== null && part.currency !== null) add(part.currency, part.amount);
  }
  const amounts = [...minor.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([currency, value]) => ({ currency, amount: formatMinor(value, minorUnits(currency)) }));
  return { amounts, ...quantities(node, gpu, unrated) };
}

function quantities(nodeSeconds: number, gpuSeconds: number, unratedSeconds: number): Quantities {
  return {
    node_seconds: nodeSeconds,
    node_hours: hours(nodeSeconds),
    gpu_seconds: gpuSeconds,
    gpu_hours: hours(gpuSeconds),
    unrated_seconds: unratedSeconds,
    unrated_hours: hours(unratedSeconds),
  };
}

/** Seconds as hours, rounded half to even to 6 places (1.8 ms): "1.500000". */
export function hours(seconds: number): string {
  return formatScaled(roundHalfEven(BigInt(seconds) * 10n ** BigInt(HOURS_DIGITS), 3600n), HOURS_DIGITS);
}

function isoOf(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
