import { describe, expect, it } from 'vitest';
import { formatDecimal, formatMinor, parseDecimal, roundHalfEven } from '../../../src/platform/costs/decimal.js';
import { currencies, minorUnits } from '../../../src/platform/costs/currencies.js';
import { clip, splitByCards } from '../../../src/platform/costs/metering.js';
import { buildReport, hours } from '../../../src/platform/costs/report.js';
import { monthWindow } from '../../../src/platform/costs/window.js';
import { expectSumsAddUp } from './sums.js';

const at = (iso: string) => Date.parse(iso) / 1000;
const card = (id: string, currency: string, node: string, from: string, to: string | null = null) => ({
  id,
  profile: 'p',
  currency,
  nodeHourPrice: node,
  gpuHourPrice: '0',
  effectiveFrom: new Date(from),
  effectiveTo: to ? new Date(to) : null,
  createdAt: new Date(from),
  start: at(from),
  end: to ? at(to) : Number.POSITIVE_INFINITY,
});
const allocation = (clusterId: string, start: string, end: string | null) => ({
  clusterId,
  clusterName: clusterId,
  clusterState: 'deleted' as const,
  orgId: 'org_a',
  profile: 'p',
  gpusPerNode: 0,
  start: at(start),
  end: end ? at(end) : null,
});

describe('cost arithmetic', () => {
  it('rounds once, half to even, to each currency’s minor units', () => {
    expect([
      roundHalfEven(5n, 2n),
      roundHalfEven(15n, 2n),
      roundHalfEven(7n, 3n),
      roundHalfEven(8n, 3n),
      roundHalfEven(0n, 7n),
    ]).toEqual([2n, 8n, 2n, 3n, 0n]);
    expect(() => roundHalfEven(1n, 0n)).toThrow(RangeError);
    expect([formatMinor(1235n, 0), formatMinor(1235n, 2), formatMinor(1235n, 3), formatMinor(5n, 3)]).toEqual([
      '1235',
      '12.35',
      '1.235',
      '0.005',
    ]);
    expect([parseDecimal('2.5'), parseDecimal('0.000000000001')]).toEqual([2_500_000_000_000n, 1n]);
    for (const bad of ['-1', '1.0000000000001', '1e3', '', ' 1', '.5'])
      expect(() => parseDecimal(bad), bad).toThrow(/not a decimal/);
    expect([formatDecimal(parseDecimal('3.000')), formatDecimal(parseDecimal('0.1235')), formatDecimal(0n)]).toEqual([
      '3',
      '0.1235',
      '0',
    ]);
    expect([hours(5400), hours(1), hours(0)]).toEqual(['1.500000', '0.000278', '0.000000']);
    expect([minorUnits('JPY'), minorUnits('USD'), minorUnits('KWD')]).toEqual([0, 2, 3]);
    expect(currencies().size).toBe(Intl.supportedValuesOf('currency').length);
  });

  it('ties in JPY and KWD go to the even minor unit, not up', () => {
    const window = monthWindow('2025-02');
    const report = (currency: string, price: string, seconds: number) =>
      buildReport({
        window,
        now: new Date('2026-01-01T00:00:00Z'),
        allocations: [
          allocation(
            'c',
            '2025-02-01T00:00:00Z',
            new Date(Date.parse('2025-02-01T00:00:00Z') + seconds * 1000).toISOString(),
          ),
        ],
        cards: [card('r', currency, price, '2025-01-01T00:00:00Z')],
        conversionRates: [],
        orgs: [{ id: 'org_a', name: 'A', billingCurrency: null }],
      }).organizations[0]!.line_items[0]!.amount;
    // Half an hour at 1 JPY = 0.5 → 0; 1.5 hours = 1.5 → 2; 2.5 hours → 2.
    expect([report('JPY', '1', 1800), report('JPY', '1', 5400), report('JPY', '1', 9000)]).toEqual(['0', '2', '2']);
    // Half an hour at 0.001 KWD = 0.0005 → 0.000; 1.5 hours → 0.002; just over half rounds up.
    expect([report('KWD', '0.001', 1800), report('KWD', '0.001', 5400), report('KWD', '0.001', 1801)]).toEqual([
      '0.000',
      '0.002',
      '0.001',
    ]);
  });

  it('clips to the window and the clock, and cuts at rate cards, leaving gaps unrated', () => {
    expect(clip({ start: 10, end: null }, { start: 0, end: 100 }, 50)).toEqual({ start: 10, end: 50 });
    expect(clip({ start: 10, end: 20 }, { start: 20, end: 100 }, 500)).toBeNull();
    const cards = [
      { id: 'a', start: 10, end: 20 },
      { id: 'b', start: 30, end: Number.POSITIVE_INFINITY },
    ];
    expect(
      splitByCards({ start: 0, end: 40 }, cards).map((part) => [part.span.start, part.span.end, part.card?.id ?? null]),
    ).toEqual([
      [0, 10, null],
      [10, 20, 'a'],
      [20, 30, null],
      [30, 40, 'b'],
    ]);
  });

  it('adds up exactly over many odd lines in several currencies', () => {
    const allocations = Array.from({ length: 50 }, (_, i) =>
      allocation(
        `c${i % 7}`,
        new Date(Date.parse('2025-01-20T00:00:00Z') + i * 7919_000).toISOString(),
        new Date(Date.parse('2025-02-10T00:00:00Z') + i * 104_729_000).toISOString(),
      ),
    );
    const report = buildReport({
      window: monthWindow('2025-02'),
      now: new Date('2026-01-01T00:00:00Z'),
      allocations,
      cards: [
        card('r1', 'KWD', '0.3333', '2025-01-01T00:00:00Z', '2025-02-07T13:17:11Z'),
        card('r2', 'JPY', '177.77', '2025-02-09T00:00:00Z'),
      ],
      conversionRates: [
        { base: 'JPY', quote: 'EUR', effectiveOn: '2025-02-01', rate: '0.006123', updatedAt: new Date() },
      ],
      orgs: [{ id: 'org_a', name: 'A', billingCurrency: 'EUR' }],
    });
    const org = report.organizations[0]!;
    expect(new Set(org.line_items.map((item) => item.currency))).toEqual(new Set(['KWD', 'EUR', null]));
    expect(org.line_items.filter((item) => item.currency === 'KWD').every((item) => item.conversion_skipped)).toBe(
      true,
    );
    expectSumsAddUp(report);
  });
});
