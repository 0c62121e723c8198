import { sql } from 'drizzle-orm';
import { boolean, index, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { organizations } from './accounts-schema.js';

/**
 * A batch (`/v1/batches`, issue 72): a file of requests run on idle capacity. It belongs to its
 * organization and the key's project (null: a key of no project), and runs under the key that made
 * it (`key_hash`: the key found again by each replica that runs a line). `claimed_by` and
 * `lease_until` are the claim of the replica that reads its input (`validating`) or writes its
 * output (`finalizing`).
 */
export const batches = pgTable(
  'batches',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    projectId: text('project_id'),
    keyId: text('key_id').notNull(),
    keyHash: text('key_hash').notNull(),
    endpoint: text('endpoint').notNull(),
    inputFileId: text('input_file_id').notNull(),
    completionWindow: text('completion_window').notNull(),
    status: text('status').notNull(),
    /**
     * The status it ends in once its lines are done: `completed`, `expired` (its window passed) or
     * `cancelled`.
     */
    ending: text('ending').notNull().default('completed'),
    /** The client's metadata, as JSON text; null when it gave none. */
    metadata: text('metadata'),
    total: integer('total').notNull().default(0),
    completed: integer('completed').notNull().default(0),
    failed: integer('failed').notNull().default(0),
    /** The wallet could not hold a line's cost: every line not yet run is an error line. */
    walletDry: boolean('wallet_dry').notNull().default(false),
    outputFileId: text('output_file_id'),
    errorFileId: text('error_file_id'),
    /** A batch that failed validation: OpenAI's `errors.data`, as JSON text. */
    errors: text('errors'),
    claimedBy: text('claimed_by'),
    leaseUntil: timestamp('lease_until', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    inProgressAt: timestamp('in_progress_at', { withTimezone: true }),
    finalizingAt: timestamp('finalizing_at', { withTimezone: true }),
    completedAt: timestamp('completed_at', { withTimezone: true }),
    failedAt: timestamp('failed_at', { withTimezone: true }),
    expiredAt: timestamp('expired_at', { withTimezone: true }),
    cancellingAt: timestamp('cancelling_at', { withTimezone: true }),
    cancelledAt: timestamp('cancelled_at', { withTimezone: true }),
  },
  (t) => [index('batches_org_created_idx').on(t.orgId, t.createdAt, t.id), index('batches_status_idx').on(t.status)],
);

/**
 * One line of a batch: its request as read from the input file, then its result. `status` is
 * `waiting`, `running` (claimed by `claimed_by` until `lease_until`), `done` (an answer of the
 * engine, `status_code` 200) or `failed` (an error line). Each runs under the request id
 * `request_id`, the same whichever replica runs it: its usage record and ledger entry are one.
 */
export const batchLines = pgTable(
  'batch_lines',
  {
    batchId: text('batch_id')
      .notNull()
      .references(() => batches.id, { onDelete: 'cascade' }),
    line: integer('line').notNull(),
    customId: text('custom_id').notNull(),
    url: text('url').notNull(),
    body: text('body').notNull(),
    status: text('status').notNull(),
    claimedBy: text('claimed_by'),
    leaseUntil: timestamp('lease_until', { withTimezone: true }),
    requestId: text('request_id').notNull(),
    statusCode: integer('status_code'),
    /** The engine's answer (or its error) as JSON text; null for a line that never reached it. */
    response: text('response'),
    /** The gateway's error `{code, message}` as JSON text, for a line it failed. */
    error: text('error'),
    promptTokens: integer('prompt_tokens').notNull().default(0),
    completionTokens: integer('completion_tokens').notNull().default(0),
    cachedTokens: integer('cached_tokens').notNull().default(0),
    reasoningTokens: integer('reasoning_tokens').notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.batchId, t.line] }),
    // A batch's open lines, and only those: what a claim, a batch's unrun lines failed and the
    // question "is it finished?" read, without walking its done lines (most of a big batch). It
    // replaces (status, lease_until), which held every line ever run.
    index('batch_lines_open_idx')
      .on(t.batchId, t.line)
      .where(sql`${t.status} in ('waiting', 'running')`),
  ],
);
