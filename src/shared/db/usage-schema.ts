import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  date,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
} from 'drizzle-orm/pg-core';
import { createdAt, money } from './columns.js';
import { apiKeys, organizations, projects } from './accounts-schema.js';

/**
 * One row per billed request; its id is the request id. Partitioned by month of `created_at`
 * (migration 0025, `billing/usage-partitions.ts`), so its key is (id, created_at): a month past the
 * detail's retention is dropped whole, its rollups (`usage_daily`) and the ledger kept.
 */
export const usageRecords = pgTable(
  'usage_records',
  {
    id: text('id').notNull(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    keyId: text('key_id')
      .notNull()
      .references(() => apiKeys.id),
    projectId: text('project_id').references(() => projects.id),
    modelId: text('model_id').notNull(),
    endpoint: text('endpoint').notNull(),
    promptTokens: integer('prompt_tokens').notNull(),
    completionTokens: integer('completion_tokens').notNull(),
    /**
     * Of the prompt tokens, those the engine reported read from its prefix cache (billed at the
     * cached-input price).
     */
    cachedTokens: integer('cached_tokens').notNull().default(0),
    /** Of the completion tokens, those the engine reported as reasoning (counted, billed as output). */
    reasoningTokens: integer('reasoning_tokens').notNull().default(0),
    cost: money('cost_nanos').notNull(),
    /** HTTP status the client received (200 for a stream that started). */
    status: integer('status').notNull(),
    streamed: boolean('streamed').notNull(),
    /** 'upstream' when the engine reported usage, 'estimated' when a cut stream had to be counted. */
    usageSource: text('usage_source').notNull(),
    latencyMs: integer('latency_ms').notNull(),
    ttftMs: integer('ttft_ms'),
    /** Served from the response cache: free, and counted against no limit. */
    cacheHit: boolean('cache_hit').notNull().default(false),
    /** The batch this request was a line of (`/v1/batches`); null outside a batch. */
    batchId: text('batch_id'),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.id, t.createdAt] }),
    index('usage_org_time_idx').on(t.orgId, t.createdAt),
    index('usage_key_time_idx').on(t.keyId, t.createdAt),
    // A project's spend this month or day, for its budget.
    index('usage_project_time_idx').on(t.projectId, t.createdAt),
    // A batch's cost so far (the portal's batches page): its lines' records only.
    index('usage_batch_idx')
      .on(t.batchId)
      .where(sql`${t.batchId} is not null`),
  ],
);

/**
 * How far per-request usage detail has been dropped (`billing/usage-partitions.ts`): one row. The
 * months before `kept_from` have rollups only; a charge up to `through_entry_id` may name a usage
 * record no longer there, which `wallet verify` accepts (`reconcile-pages.ts`).
 */
export const usageDetailHorizon = pgTable('usage_detail_horizon', {
  id: integer('id').primaryKey().default(1),
  keptFrom: timestamp('kept_from', { withTimezone: true }).notNull(),
  throughEntryId: bigint('through_entry_id', { mode: 'number' }).notNull(),
});

/**
 * Usage summed per organization, UTC day, key, project and model (and batch or not): what every
 * report reads (`billing/usage-reports.ts`), so a report's cost follows the days it covers, not the
 * requests. Written in the same statement as the usage records it sums
 * (`WalletService.chargeMany`), only for records actually inserted, so it always equals them to the
 * nano-unit. A null project is one group.
 */
export const usageDaily = pgTable(
  'usage_daily',
  {
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    day: date('day', { mode: 'string' }).notNull(),
    keyId: text('key_id')
      .notNull()
      .references(() => apiKeys.id),
    projectId: text('project_id').references(() => projects.id),
    modelId: text('model_id').notNull(),
    /** Usage of batch lines (`usage_records.batch_id` set). */
    batch: boolean('batch').notNull().default(false),
    requests: bigint('requests', { mode: 'number' }).notNull(),
    /** Requests answered from the response cache. */
    cacheHits: bigint('cache_hits', { mode: 'number' }).notNull(),
    /** Requests that ended with a status of 400 or more. */
    errors: bigint('errors', { mode: 'number' }).notNull(),
    promptTokens: bigint('prompt_tokens', { mode: 'number' }).notNull(),
    completionTokens: bigint('completion_tokens', { mode: 'number' }).notNull(),
    cachedTokens: bigint('cached_tokens', { mode: 'number' }).notNull(),
    reasoningTokens: bigint('reasoning_tokens', { mode: 'number' }).notNull(),
    /**
     * Prompt and completion tokens of the cache hits, which count against no limit
     * (`monthly-tokens.ts`).
     */
    cacheHitTokens: bigint('cache_hit_tokens', { mode: 'number' }).notNull(),
    cost: money('cost_nanos').notNull(),
  },
  (t) => [
    unique('usage_daily_group').on(t.orgId, t.day, t.keyId, t.projectId, t.modelId, t.batch).nullsNotDistinct(),
    // A key's or a project's days, for budgets and the monthly quota.
    index('usage_daily_key_idx').on(t.keyId, t.day),
    index('usage_daily_project_idx').on(t.projectId, t.day),
  ],
);

/**
 * Request and response bodies, kept only for keys with "store request data" on, for the retention
 * period. The usage record's id, without a foreign key: a partitioned table's key includes its
 * partition column.
 */
export const requestData = pgTable(
  'request_data',
  {
    requestId: text('request_id').primaryKey(),
    requestBody: text('request_body').notNull(),
    responseBody: text('response_body').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('request_data_time_idx').on(t.createdAt)],
);
