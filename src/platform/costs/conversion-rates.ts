import { and, asc, eq, lte } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { conversionRates } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';

export type ConversionRateRow = typeof conversionRates.$inferSelect;

/**
 * Conversion rates, set by operators only: 1 `base` = `rate` `quote` from
 * the UTC date `effectiveOn` until the pair's next date. Only the pair asked
 * for is used: no inverse, no chain through a third currency, no guess.
 *
 * @example
 * await rates.set({ base: 'USD', quote: 'EUR', effectiveOn: '2026-11-01', rate: '0.92' });
 * rateInForce(await rates.upTo('2026-11-30'), 'USD', 'EUR', '2026-11-15'); // the row of 2026-11-01
 */
export class ConversionRates {
  constructor(private readonly db: Database) {}

  /** Sets (or replaces) the pair's rate for a date; answers whether it was new. */
  async set(rate: {
    base: string;
    quote: string;
    effectiveOn: string;
    rate: string;
  }): Promise<{ row: ConversionRateRow; created: boolean }> {
    return this.db.transaction(async (tx) => {
      const where = and(
        eq(conversionRates.base, rate.base),
        eq(conversionRates.quote, rate.quote),
        eq(conversionRates.effectiveOn, rate.effectiveOn),
      );
      const [existing] = await tx.select().from(conversionRates).where(where).for('update');
      if (existing) {
        const [row] = await tx
          .update(conversionRates)
          .set({ rate: rate.rate, updatedAt: new Date() })
          .where(where)
          .returning();
        return { row: row!, created: false };
      }
      const [row] = await tx.insert(conversionRates).values(rate).returning();
      return { row: row!, created: true };
    });
  }

  list(filter: { base?: string; quote?: string } = {}): Promise<ConversionRateRow[]> {
    return this.db
      .select()
      .from(conversionRates)
      .where(
        and(
          filter.base ? eq(conversionRates.base, filter.base) : undefined,
          filter.quote ? eq(conversionRates.quote, filter.quote) : undefined,
        ),
      )
      .orderBy(asc(conversionRates.base), asc(conversionRates.quote), asc(conversionRates.effectiveOn));
  }

  async delete(key: { base: string; quote: string; effectiveOn: string }): Promise<void> {
    const deleted = await this.db
      .delete(conversionRates)
      .where(
        and(
          eq(conversionRates.base, key.base),
          eq(conversionRates.quote, key.quote),
          eq(conversionRates.effectiveOn, key.effectiveOn),
        ),
      )
      .returning({ base: conversionRates.base });
    if (deleted.length === 0)
      throw new GatewayError('not_found', `There is no ${key.base}/${key.quote} rate for ${key.effectiveOn}.`);
  }

  /**
   * Every rate in force on or before `date` (YYYY-MM-DD), oldest first: what a report's conversions
   * choose from.
   */
  upTo(date: string): Promise<ConversionRateRow[]> {
    return this.db
      .select()
      .from(conversionRates)
      .where(lte(conversionRates.effectiveOn, date))
      .orderBy(asc(conversionRates.effectiveOn));
  }
}

/** The pair's rate in force on `date`: the latest set on or before it; undefined when none. */
export function rateInForce(
  rows: readonly ConversionRateRow[],
  base: string,
  quote: string,
  date: string,
): ConversionRateRow | undefined {
  let found: ConversionRateRow | undefined;
  for (const row of rows)
    if (
      row.base === base &&
      row.quote === quote &&
      row.effectiveOn <= date &&
      (!found || row.effectiveOn > found.effectiveOn)
    )
      found = row;
  return found;
}
