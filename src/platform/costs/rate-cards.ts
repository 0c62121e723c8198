import { and, asc, eq, gt, isNull, lt, or, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { newId } from '../../shared/db/ids.js';
import { hardwareProfiles, rateCards } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';

export type RateCardRow = typeof rateCards.$inferSelect;

export interface NewRateCard {
  profile: string;
  currency: string;
  /** Decimal strings, at most 12 decimal places (checked by the caller's schema). */
  nodeHourPrice: string;
  gpuHourPrice: string;
  effectiveFrom: Date;
  effectiveTo: Date | null;
}

/**
 * Operators' rate cards. A profile's cards never overlap: each is added in a
 * transaction that first locks the profile's row, so two additions for one
 * profile take turns. A new open-ended card ("from this instant on") ends the
 * open-ended card before it at its start, which is how a price changes; any
 * other overlap is refused (409).
 *
 * @example
 * await rateCards.add({ profile: 'a100x8', currency: 'USD', nodeHourPrice: '2.50', gpuHourPrice: '0.40', effectiveFrom: new Date('2026-11-01T00:00:00Z'), effectiveTo: null });
 */
export class RateCards {
  constructor(private readonly db: Database) {}

  add(card: NewRateCard): Promise<RateCardRow> {
    return this.db.transaction(async (tx) => {
      const [profile] = await tx
        .select({ name: hardwareProfiles.name })
        .from(hardwareProfiles)
        .where(eq(hardwareProfiles.name, card.profile))
        .for('update');
      if (!profile)
        throw new GatewayError('invalid_request', `There is no hardware profile ${card.profile}.`, {
          details: [{ field: 'profile', message: `Unknown profile ${card.profile}.` }],
        });
      const others = await tx
        .select()
        .from(rateCards)
        .where(eq(rateCards.profile, card.profile))
        .orderBy(asc(rateCards.effectiveFrom));
      const end = card.effectiveTo?.getTime() ?? Infinity;
      const superseded =
        card.effectiveTo === null
          ? others.find((other) => other.effectiveTo === null && other.effectiveFrom < card.effectiveFrom)
          : undefined;
      const clash = others.find(
        (other) =>
          other !== superseded &&
          other.effectiveFrom.getTime() < end &&
          card.effectiveFrom.getTime() < (other.effectiveTo?.getTime() ?? Infinity),
      );
      if (clash) {
        const message = `Profile ${card.profile} has rate card ${clash.id} from ${clash.effectiveFrom.toISOString()} to ${clash.effectiveTo?.toISOString() ?? 'further notice'}; cards of a profile cannot overlap.`;
        throw new GatewayError('conflict', message, {
          details: [{ field: 'effective_from', message: `Overlaps rate card ${clash.id}.` }],
        });
      }
      if (superseded)
        await tx.update(rateCards).set({ effectiveTo: card.effectiveFrom }).where(eq(rateCards.id, superseded.id));
      const [row] = await tx
        .insert(rateCards)
        .values({ id: newId('rate'), ...card })
        .returning();
      return row!;
    });
  }

  /** All cards, or one profile's, by profile and start. */
  list(profile?: string): Promise<RateCardRow[]> {
    return this.db
      .select()
      .from(rateCards)
      .where(profile === undefined ? undefined : eq(rateCards.profile, profile))
      .orderBy(asc(rateCards.profile), asc(rateCards.effectiveFrom));
  }

  async delete(id: string): Promise<void> {
    const deleted = await this.db.delete(rateCards).where(eq(rateCards.id, id)).returning({ id: rateCards.id });
    if (deleted.length === 0) throw new GatewayError('not_found', `Rate card ${id} does not exist.`);
  }

  /**
   * The cards in force at some instant of `[from, to)`, with their spans in whole seconds
   * (open-ended: to infinity).
   */
  async inWindow(window: { from: Date; to: Date }): Promise<(RateCardRow & { start: number; end: number })[]> {
    const rows = await this.db
      .select()
      .from(rateCards)
      .where(
        and(
          lt(rateCards.effectiveFrom, window.to),
          or(isNull(rateCards.effectiveTo), gt(rateCards.effectiveTo, window.from)),
        ),
      )
      .orderBy(asc(rateCards.effectiveFrom), sql`${rateCards.id}`);
    return rows.map((row) => ({
      ...row,
      start: Math.floor(row.effectiveFrom.getTime() / 1000),
      end: row.effectiveTo ? Math.floor(row.effectiveTo.getTime() / 1000) : Number.POSITIVE_INFINITY,
    }));
  }
}
