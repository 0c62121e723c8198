import { sql } from 'drizzle-orm';
import { check, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * A Docker engine's replica count, shared by every gateway process of a
 * deployment (they share its containers, so they must agree on how many),
 * and the lease on its one scaling step at a time: a step is a
 * compare-and-set from the count a process saw, taken only when no other
 * process holds an unexpired lease, so two processes that both see a queue
 * add one replica, not two.
 */
export const engineScaling = pgTable(
  'engine_scaling',
  {
    deployment: text('deployment').notNull(),
    engine: text('engine').notNull(),
    desired: integer('desired').notNull(),
    /** The process running the current step, until it ends or the lease expires. */
    holder: text('holder'),
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true }),
    changedAt: timestamp('changed_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'engine_scaling_pkey', columns: [t.deployment, t.engine] }),
    check('engine_scaling_desired_check', sql`${t.desired} >= 0`),
  ],
);
