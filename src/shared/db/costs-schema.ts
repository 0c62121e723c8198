import { sql } from 'drizzle-orm';
import { check, date, index, numeric, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { createdAt } from './columns.js';
import { organizations } from './accounts-schema.js';
import { hardwareProfiles } from './clusters-schema.js';

/** An exact decimal (prices, conversion rates): drizzle reads `numeric` as a string, never a float. */
const decimal = (name: string) => numeric(name, { precision: 30, scale: 12 });

/**
 * An operator's price for one hardware profile, in one currency (ISO 4217),
 * per node-hour and per GPU-hour, applying from `effective_from` (inclusive)
 * to `effective_to` (exclusive; null: until further notice). A profile's
 * cards never overlap (checked by `costs/rate-cards.ts` under a lock on the
 * profile), so each second of usage has at most one price.
 */
export const rateCards = pgTable(
  'rate_cards',
  {
    id: text('id').primaryKey(),
    profile: text('profile')
      .notNull()
      .references(() => hardwareProfiles.name),
    currency: text('currency').notNull(),
    nodeHourPrice: decimal('node_hour_price').notNull(),
    gpuHourPrice: decimal('gpu_hour_price').notNull(),
    effectiveFrom: timestamp('effective_from', { withTimezone: true }).notNull(),
    effectiveTo: timestamp('effective_to', { withTimezone: true }),
    createdAt: createdAt(),
  },
  (t) => [
    index('rate_cards_profile_idx').on(t.profile, t.effectiveFrom),
    check('rate_cards_currency_check', sql`${t.currency} ~ '^[A-Z]{3}$'`),
    check('rate_cards_prices_check', sql`${t.nodeHourPrice} >= 0 and ${t.gpuHourPrice} >= 0`),
    check('rate_cards_range_check', sql`${t.effectiveTo} is null or ${t.effectiveTo} > ${t.effectiveFrom}`),
  ],
);

/**
 * Set by operators only: 1 `base` = `rate` `quote`, in force from the UTC
 * date `effective_on` until the pair's next date. One rate per pair and date.
 */
export const conversionRates = pgTable(
  'conversion_rates',
  {
    base: text('base_currency').notNull(),
    quote: text('quote_currency').notNull(),
    effectiveOn: date('effective_on', { mode: 'string' }).notNull(),
    rate: decimal('rate').notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'conversion_rates_pkey', columns: [t.base, t.quote, t.effectiveOn] }),
    check(
      'conversion_rates_codes_check',
      sql`${t.base} ~ '^[A-Z]{3}$' and ${t.quote} ~ '^[A-Z]{3}$' and ${t.base} <> ${t.quote}`,
    ),
    check('conversion_rates_rate_check', sql`${t.rate} > 0`),
  ],
);

/**
 * The currency an organization's cost reports are converted to; no row:
 * each line keeps its rate card's currency. Its own table, not a column of
 * `organizations`, so changing it does not move the catalog version.
 */
export const billingCurrencies = pgTable('billing_currencies', {
  orgId: text('org_id')
    .primaryKey()
    .references(() => organizations.id),
  currency: text('currency').notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});
