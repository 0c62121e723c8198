import { sql } from 'drizzle-orm';
import { bigint, boolean, check, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { createdAt, money } from './columns.js';

export const TASK_TYPES = ['chat', 'embedding'] as const;
export type TaskType = (typeof TASK_TYPES)[number];

/** The catalog. A request's `model` may name any of id, display name or Hugging Face repo id. */
export const models = pgTable(
  'models',
  {
    id: text('id').primaryKey(),
    displayName: text('display_name').notNull(),
    hfRepoId: text('hf_repo_id').notNull(),
    taskType: text('task_type', { enum: TASK_TYPES }).notNull(),
    contextLength: integer('context_length').notNull(),
    enabled: boolean('enabled').notNull().default(true),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('models_display_name_idx').on(t.displayName), uniqueIndex('models_hf_repo_idx').on(t.hfRepoId)],
);

/** Per-token prices in nano-units; one row per model (the current price). */
export const prices = pgTable('prices', {
  modelId: text('model_id')
    .primaryKey()
    .references(() => models.id),
  inputPerToken: money('input_nanos_per_token').notNull(),
  /**
   * Prompt tokens the engine read from its prefix cache; null: the input price
   * (`billing/money.ts`'s `costOf`).
   */
  cachedInputPerToken: money('cached_input_nanos_per_token'),
  outputPerToken: money('output_nanos_per_token').notNull(),
  /**
   * A batch line's input and output tokens (issue 72); null: the input and output prices
   * (`money.ts`'s `batchPrice`).
   */
  batchInputPerToken: money('batch_input_nanos_per_token'),
  batchOutputPerToken: money('batch_output_nanos_per_token'),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

/**
 * One row, one number: moved forward by a trigger on every change to keys,
 * models, prices, projects and organizations (migration 0002). Gateways poll
 * it to drop their in-process request-path cache (`catalog/request-path-cache.ts`).
 */
export const catalogVersion = pgTable(
  'catalog_version',
  {
    id: integer('id').primaryKey().default(1),
    version: bigint('version', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
  },
  (t) => [check('catalog_version_single_row', sql`${t.id} = 1`)],
);
