import { sql } from 'drizzle-orm';
import { bigint, bigserial, index, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { createdAt, money } from './columns.js';
import { organizations } from './accounts-schema.js';

export const wallets = pgTable('wallets', {
  orgId: text('org_id')
    .primaryKey()
    .references(() => organizations.id),
  /**
   * The ledger's sum. Holds of requests in flight are kept by the limits gate, not here
   * (`admission/gate.ts`).
   */
  balance: money('balance_nanos')
    .notNull()
    .default(sql`0`),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

export const LEDGER_KINDS = ['topup', 'charge', 'refund', 'adjustment'] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];

/**
 * Append-only: rows are inserted, never updated or deleted. Their amounts sum to the wallet's
 * balance.
 */
export const ledgerEntries = pgTable(
  'ledger_entries',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    kind: text('kind', { enum: LEDGER_KINDS }).notNull(),
    /** Signed: top-ups positive, charges negative. */
    amount: money('amount_nanos').notNull(),
    balanceAfter: money('balance_after_nanos').notNull(),
    /** For charges: the request id, unique, so a retried write never charges twice. */
    requestId: text('request_id'),
    note: text('note'),
    createdAt: createdAt(),
  },
  (t) => [
    index('ledger_org_idx').on(t.orgId, t.id),
    uniqueIndex('ledger_request_idx').on(t.requestId),
    // A window of one organization's ledger, read in order for its export (`ledger-export.ts`).
    index('ledger_org_time_idx').on(t.orgId, t.createdAt, t.id),
    // The few entries that are not charges (top-ups, refunds, adjustments), newest first: the
    // wallet page's top-ups, read without walking past a year of charges.
    index('ledger_org_kind_idx')
      .on(t.orgId, t.kind, t.id)
      .where(sql`${t.kind} <> 'charge'`),
  ],
);

/**
 * The last point up to which an organization's books were verified (`billing/reconcile.ts`): the
 * ledger's entries up to `last_entry_id`, how many, the balance after them and a SHA-256 chained
 * over them, so the next `wallet verify` reads only what came after, and a full one finds an entry
 * edited behind it.
 */
export const ledgerCheckpoints = pgTable('ledger_checkpoints', {
  orgId: text('org_id')
    .primaryKey()
    .references(() => organizations.id),
  lastEntryId: bigint('last_entry_id', { mode: 'number' }).notNull(),
  entries: bigint('entries', { mode: 'number' }).notNull(),
  balance: money('balance_nanos').notNull(),
  /** Hex SHA-256 chained over the entries covered, in id order (`ledger-checkpoints.ts`). */
  digest: text('digest').notNull(),
  /** The usage records dated from here on are the next verification's to read. */
  usageFrom: timestamp('usage_from', { withTimezone: true }).notNull(),
  madeAt: timestamp('made_at', { withTimezone: true }).notNull().defaultNow(),
});
