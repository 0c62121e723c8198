import { csvText } from '../../shared/http/csv.js';
import type { CostReport } from './report.js';

/**
 * The CSV columns: FinOps FOCUS names where one fits, ours after them with
 * FOCUS's `x_` prefix for custom columns. One row per line item.
 */
const CSV_COLUMNS = [
  'BillingPeriodStart',
  'BillingPeriodEnd',
  'ChargePeriodStart',
  'ChargePeriodEnd',
  'BilledCost',
  'BillingCurrency',
  'SubAccountId',
  'SubAccountName',
  'ResourceId',
  'ResourceName',
  'SkuId',
  'SkuPriceId',
  'ConsumedQuantity',
  'ConsumedUnit',
  'x_ClusterState',
  'x_GpusPerNode',
  'x_NodeSeconds',
  'x_GpuSeconds',
  'x_GpuHours',
  'x_UnratedSeconds',
  'x_UnratedHours',
  'x_NodeHourPrice',
  'x_GpuHourPrice',
  'x_NativeCost',
  'x_NativeCurrency',
  'x_ConversionRate',
  'x_ConversionRateDate',
  'x_ConversionSkipped',
] as const;

/**
 * A report's line items as CSV, written as every CSV of the gateway is
 * (`http/csv.ts`: a cluster named `=HYPERLINK(…)` comes out as text).
 * Unrated lines have empty costs.
 *
 * @example
 * c.body(costsCsv(report), 200, { 'content-type': 'text/csv; charset=utf-8' });
 */
export function costsCsv(report: CostReport): string {
  const rows = report.organizations.flatMap((org) =>
    org.line_items.map((item) => [
      report.window.from,
      report.window.to,
      item.charge_period_start,
      item.charge_period_end,
      item.amount ?? '',
      item.currency ?? '',
      org.org_id,
      org.org_name,
      item.cluster_id,
      item.cluster_name,
      item.profile,
      item.rate_card?.id ?? '',
      item.node_hours,
      'Node-Hours',
      item.cluster_state,
      item.gpus_per_node,
      item.node_seconds,
      item.gpu_seconds,
      item.gpu_hours,
      item.unrated_seconds,
      item.unrated_hours,
      item.rate_card?.node_hour_price ?? '',
      item.rate_card?.gpu_hour_price ?? '',
      item.native_amount ?? '',
      item.native_currency ?? '',
      item.conversion?.rate ?? '',
      item.conversion?.effective_on ?? '',
      item.conversion_skipped,
    ]),
  );
  return csvText(CSV_COLUMNS, rows);
}

/** The download's file name: `tollgate-costs_<from>_<to>.csv`, instants as `20261101T000000Z`. */
export function csvFileName(report: CostReport): string {
  const compact = (iso: string) => iso.replace(/[-:]/g, '').replace(/\.\d+/, '');
  return `tollgate-costs_${compact(report.window.from)}_${compact(report.window.to)}.csv`;
}
