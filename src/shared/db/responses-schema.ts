import {
  bigint,
  boolean,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { apiKeys, organizations } from './accounts-schema.js';

/**
 * Stored Responses (`POST /v1/responses` with `store`), read back by their
 * organization only, and continued by `previous_response_id` from any gateway
 * process (`gateway/stored-responses/database-store.ts`). The response is JSON text
 * without its `output` (`"output": null`), which is `output_json` apart: a
 * conversation's later turns read the outputs and the input items, never the
 * rest. `jsonb` would refuse a `\u0000` in a tenant's text and reorder the
 * object's keys. `bytes` is the texts' UTF-8 size, the input items' included,
 * bounded by TOLLGATE_RESPONSES_MAX_BYTES; a row is gone for reads once
 * `expires_at` is past (TOLLGATE_RESPONSES_RETENTION_DAYS), and purged soon
 * after, its input items with it.
 */
export const storedResponses = pgTable(
  'stored_responses',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    keyId: text('key_id')
      .notNull()
      .references(() => apiKeys.id),
    model: text('model').notNull(),
    /**
     * Not a foreign key: the turn it continues may be deleted or purged first; the chain then ends
     * there.
     */
    previousResponseId: text('previous_response_id'),
    response: text('response_json').notNull(),
    /**
     * Null only for a response stored before migration 0018 whose text held a `\u0000`: its output
     * is in `response`.
     */
    output: text('output_json'),
    bytes: integer('bytes').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    index('stored_responses_org_idx').on(t.orgId, t.createdAt),
    index('stored_responses_expiry_idx').on(t.expiresAt),
  ],
);

/**
 * A stored response's input items, one row each in the order given
 * (`position` from 0), so `GET /v1/responses/{id}/input_items` reads a page,
 * not the whole input. `item_id` is the item's `id`, unique in its response
 * (the cursor of `after` and `before`).
 */
export const storedResponseInputItems = pgTable(
  'stored_response_input_items',
  {
    responseId: text('response_id')
      .notNull()
      .references(() => storedResponses.id, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    itemId: text('item_id').notNull(),
    item: text('item_json').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.responseId, t.position] }),
    uniqueIndex('stored_response_input_items_id_idx').on(t.responseId, t.itemId),
  ],
);

/**
 * The bytes of each organization's stored Responses, moved in the same
 * transaction as the rows they count (saved, deleted, purged): the bound
 * TOLLGATE_RESPONSES_ORG_MAX_BYTES is checked on this one row, not by summing
 * the organization's responses on every save.
 */
export const storedResponseTotals = pgTable('stored_response_totals', {
  orgId: text('org_id')
    .primaryKey()
    .references(() => organizations.id),
  bytes: bigint('bytes', { mode: 'number' }).notNull().default(0),
});

/**
 * Background Responses (`background: true` on `/v1/responses`), each organization's own: the job
 * of a turn that runs after its answer (`queued`), claimed by one gateway replica with a lease
 * (`claimed_by`, `lease_until`) renewed while it runs, so a replica that starts finds the jobs of
 * one that died (`gateway/requests/responses/background-runner.ts`). `request_json` is what a
 * replica needs to run it again (the body, the model as named, the project, the band); `key_hash`
 * finds its key as the request path does. `reached_engine` says whether the engine was sent it:
 * such a job is never run twice, and `generated_tokens` is what it is billed when its replica died.
 * `response_json` is the response as `GET` shows it until it is stored whole (`stored_responses`).
 */
export const backgroundResponses = pgTable(
  'background_responses',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    keyId: text('key_id')
      .notNull()
      .references(() => apiKeys.id),
    keyHash: text('key_hash').notNull(),
    /** The billed request's id: a job run again or billed by another replica keeps it (one charge). */
    requestId: text('request_id').notNull(),
    request: text('request_json').notNull(),
    status: text('status', {
      enum: ['queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled'],
    }).notNull(),
    response: text('response_json').notNull(),
    /** Whether its client asked for a stream: its events are kept (`background_response_events`). */
    streamed: boolean('streamed').notNull(),
    reachedEngine: boolean('reached_engine').notNull().default(false),
    promptTokens: integer('prompt_tokens').notNull().default(0),
    generatedTokens: integer('generated_tokens').notNull().default(0),
    /** Of the counts above, those the engine reported cached and reasoning, billed as any record's. */
    cachedTokens: integer('cached_tokens').notNull().default(0),
    reasoningTokens: integer('reasoning_tokens').notNull().default(0),
    cancelRequested: boolean('cancel_requested').notNull().default(false),
    claimedBy: text('claimed_by'),
    leaseUntil: timestamp('lease_until', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    index('background_responses_org_idx').on(t.orgId, t.status),
    index('background_responses_lease_idx').on(t.status, t.leaseUntil),
    index('background_responses_expiry_idx').on(t.expiresAt),
  ],
);

/** A streamed background response's events in order, for `starting_after` on any replica. */
export const backgroundResponseEvents = pgTable(
  'background_response_events',
  {
    responseId: text('response_id')
      .notNull()
      .references(() => backgroundResponses.id, { onDelete: 'cascade' }),
    sequenceNumber: integer('sequence_number').notNull(),
    event: text('event_text').notNull(),
  },
  (t) => [primaryKey({ columns: [t.responseId, t.sequenceNumber] })],
);
