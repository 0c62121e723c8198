import { eq, inArray } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { billingCurrencies, organizations } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { ConversionRates } from './conversion-rates.js';
import { allocationsIn } from './metering.js';
import { RateCards } from './rate-cards.js';
import { buildReport, type CostReport, type ReportOrg } from './report.js';
import type { CostWindow } from './window.js';

/**
 * Cost reports of organizations' clusters, and what they read: operators'
 * rate cards and conversion rates, and each organization's billing currency.
 *
 * @example
 * const report = await costs.report({ orgId: actor.orgId }, parseWindow(query, now), now);
 */
export class CostService {
  readonly rateCards: RateCards;
  readonly conversionRates: ConversionRates;

  constructor(private readonly db: Database) {
    this.rateCards = new RateCards(db);
    this.conversionRates = new ConversionRates(db);
  }

  /** The organization's billing currency; null: each line keeps its rate card's. */
  async billingCurrency(orgId: string): Promise<string | null> {
    const [row] = await this.db
      .select({ currency: billingCurrencies.currency })
      .from(billingCurrencies)
      .where(eq(billingCurrencies.orgId, orgId));
    return row?.currency ?? null;
  }

  /** Every organization's billing currency that is set, by organization id, in one query. */
  async billingCurrencies(): Promise<Map<string, string>> {
    const rows = await this.db
      .select({ orgId: billingCurrencies.orgId, currency: billingCurrencies.currency })
      .from(billingCurrencies);
    return new Map(rows.map((row) => [row.orgId, row.currency]));
  }

  /**
   * Sets (a code the caller has checked) or clears (null) the billing currency; 404 for an unknown
   * organization.
   */
  async setBillingCurrency(orgId: string, currency: string | null): Promise<string | null> {
    const [org] = await this.db.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, orgId));
    if (!org) throw new GatewayError('not_found', `Organization ${orgId} does not exist.`);
    if (currency === null) {
      await this.db.delete(billingCurrencies).where(eq(billingCurrencies.orgId, orgId));
    } else {
      await this.db
        .insert(billingCurrencies)
        .values({ orgId, currency })
        .onConflictDoUpdate({ target: billingCurrencies.orgId, set: { currency, updatedAt: new Date() } });
    }
    return currency;
  }

  /**
   * The report of a window as of `now` (nodes still running count until
   * then): of one organization (always listed, even without usage), or of
   * every organization with usage in the window (`orgId` null).
   */
  async report(scope: { orgId: string | null }, window: CostWindow, now: Date): Promise<CostReport> {
    const lastDay = new Date(Math.min(window.to.getTime(), now.getTime()) - 1000).toISOString().slice(0, 10);
    const [allocations, cards, conversionRates] = await Promise.all([
      allocationsIn(this.db, window, scope.orgId),
      this.rateCards.inWindow(window),
      this.conversionRates.upTo(lastDay),
    ]);
    const ids = scope.orgId === null ? [...new Set(allocations.map((allocation) => allocation.orgId))] : [scope.orgId];
    return buildReport({ window, now, allocations, cards, conversionRates, orgs: await this.orgs(ids) });
  }

  /** Names and billing currencies, by name. */
  private async orgs(ids: string[]): Promise<ReportOrg[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .select({ id: organizations.id, name: organizations.name, billingCurrency: billingCurrencies.currency })
      .from(organizations)
      .leftJoin(billingCurrencies, eq(billingCurrencies.orgId, organizations.id))
      .where(inArray(organizations.id, ids));
    return rows
      .map((row) => ({ id: row.id, name: row.name, billingCurrency: row.billingCurrency ?? null }))
      .sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  }
}
