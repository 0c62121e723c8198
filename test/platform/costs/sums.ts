import { expect } from 'vitest';
import type { CostReport, Totals } from '../../../src/platform/costs/report.js';

/** An amount string in minor units, exactly: "12.35" → 1235n, "1059" → 1059n. */
const minor = (amount: string) => BigInt(amount.replace('.', ''));

/**
 * Checks that a report adds up, exactly: each organization's totals are the
 * sums of its line items (seconds, and amounts per currency in minor units),
 * and the grand totals the sums of the organizations'. Hours are the seconds
 * over 3600, to 6 places.
 */
export function expectSumsAddUp(report: CostReport): void {
  const sum = (parts: { seconds: [number, number, number]; amounts: [string, string][] }[]) => {
    const amounts = new Map<string, bigint>();
    const seconds = [0, 0, 0];
    for (const part of parts) {
      part.seconds.forEach((value, i) => (seconds[i]! += value));
      for (const [currency, amount] of part.amounts)
        amounts.set(currency, (amounts.get(currency) ?? 0n) + minor(amount));
    }
    return {
      seconds,
      amounts: Object.fromEntries([...amounts].map(([currency, value]) => [currency, value.toString()])),
    };
  };
  const of = (totals: Totals) => ({
    seconds: [totals.node_seconds, totals.gpu_seconds, totals.unrated_seconds],
    amounts: Object.fromEntries(totals.amounts.map((a) => [a.currency, minor(a.amount).toString()])),
  });
  for (const org of report.organizations) {
    const lines = sum(
      org.line_items.map((item) => ({
        seconds: [item.node_seconds, item.gpu_seconds, item.unrated_seconds],
        amounts: item.amount === null ? [] : [[item.currency!, item.amount]],
      })),
    );
    expect(of(org.totals), org.org_name).toEqual(lines);
    for (const item of [...org.line_items, org.totals]) {
      expect(Number(item.node_hours)).toBeCloseTo(item.node_seconds / 3600, 6);
      expect(Number(item.gpu_hours)).toBeCloseTo(item.gpu_seconds / 3600, 6);
      expect(Number(item.unrated_hours)).toBeCloseTo(item.unrated_seconds / 3600, 6);
    }
  }
  const orgs = sum(
    report.organizations.map((org) => ({
      seconds: [org.totals.node_seconds, org.totals.gpu_seconds, org.totals.unrated_seconds],
      amounts: org.totals.amounts.map((a) => [a.currency, a.amount]),
    })),
  );
  expect(of(report.totals)).toEqual(orgs);
}
