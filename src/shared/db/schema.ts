import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  check,
  date,
  index,
  integer,
  jsonb,
  numeric,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { bytea } from './bytea.js';

// The store. Money columns hold integer nano-units of the gateway's currency
// (1 USD = 1_000_000_000), as bigint: never floats. See `src/gateway/billing/money.ts`.

const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow();
const money = (name: string) => bigint(name, { mode: 'bigint' });

/** The spec's "account": owns keys, projects, a wallet and usage. */
export const organizations = pgTable(
  'organizations',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    /**
     * Its weight in the fleet's fair share (`gateway/flow/`): 2 is served twice the tokens of 1
     * when both wait.
     */
    shareWeight: integer('share_weight').notNull().default(1),
    createdAt: createdAt(),
  },
  (t) => [check('organizations_share_weight_check', sql`${t.shareWeight} between 1 and 1000`)],
);

/** The fleet's priority bands, highest first (`gateway/flow/bands.ts` says what each means). */
export const BANDS = ['interactive', 'default', 'background', 'batch'] as const;

/** The roles a user has in their organization; see `people/permissions.ts` for what each may do. */
export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

/**
 * A person: belongs to one organization with a role. Deleting a user keeps
 * the row (`deleted_at`), so the keys they made and the usage of those keys
 * still name them; a deleted user's email is free for a new user.
 */
export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    name: text('name').notNull(),
    /** Normalized (`people/email.ts`: NFKC, lower case) before it is stored; compared as it is. */
    email: text('email').notNull(),
    /** `scrypt$<log2 N>$<r>$<p>$<salt>$<hash>` (base64url): the parameters travel with the hash. */
    passwordHash: text('password_hash').notNull(),
    role: text('role', { enum: ROLES }).notNull(),
    /** The spec's "admin": adds global templates, sets conversion rates. Set only by the operator. */
    platformAdmin: boolean('platform_admin').notNull().default(false),
    createdAt: createdAt(),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
  },
  (t) => [
    uniqueIndex('users_email_idx')
      .on(t.email)
      .where(sql`${t.deletedAt} is null`),
    index('users_org_idx').on(t.orgId),
    check('users_role_check', sql`${t.role} in ('owner', 'admin', 'member')`),
  ],
);

/** A portal sign-in. The cookie holds a random id; only its SHA-256 is stored. */
export const sessions = pgTable(
  'sessions',
  {
    idHash: text('id_hash').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id),
    createdAt: createdAt(),
    /** Moved forward as the session is used (at most once a minute); idle expiry counts from it. */
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).notNull().defaultNow(),
    /** The absolute expiry, fixed at sign-in. */
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('sessions_user_idx').on(t.userId)],
);

export const PROJECT_VISIBILITIES = ['public', 'private'] as const;
export type ProjectVisibility = (typeof PROJECT_VISIBILITIES)[number];

export const projects = pgTable(
  'projects',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    /** public: every user of the organization sees it; private: its creator, owners and admins. */
    visibility: text('visibility', { enum: PROJECT_VISIBILITIES }).notNull().default('public'),
    /** Null for projects made by the operator. */
    createdBy: text('created_by').references(() => users.id),
    createdAt: createdAt(),
    /**
     * Budgets (nano-units of the billing currency) per calendar month and per day, UTC; null: none
     * (`admission/budgets.ts`).
     */
    monthlyBudget: money('monthly_budget_nanos'),
    dailyBudget: money('daily_budget_nanos'),
    /** Deleted projects keep their row: usage records still name them. */
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
  },
  (t) => [
    index('projects_org_idx').on(t.orgId),
    check('projects_visibility_check', sql`${t.visibility} in ('public', 'private')`),
  ],
);

export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    /** The project usage goes to when a request names none in X-Project-ID. */
    projectId: text('project_id').references(() => projects.id),
    /** The person the key acts as; null only for keys made before the organization had a user. */
    userId: text('user_id').references(() => users.id),
    name: text('name').notNull(),
    /** SHA-256 of the whole secret, hex; the secret itself is never stored. */
    secretHash: text('secret_hash').notNull(),
    /** Prefix and last four characters, so operators can tell keys apart. */
    secretHint: text('secret_hint').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    requestsPerMinute: integer('requests_per_minute').notNull().default(60),
    maxConcurrency: integer('max_concurrency').notNull().default(10),
    /** null = unlimited */
    tokensPerMinute: integer('tokens_per_minute'),
    /** null = unlimited */
    monthlyTokens: bigint('monthly_tokens', { mode: 'number' }),
    storeRequestData: boolean('store_request_data').notNull().default(false),
    responseCache: boolean('response_cache').notNull().default(false),
    /**
     * Budgets (nano-units of the billing currency) per calendar month and per day, UTC; null: none
     * (`admission/budgets.ts`).
     */
    monthlyBudget: money('monthly_budget_nanos'),
    dailyBudget: money('daily_budget_nanos'),
    /**
     * The highest priority band its requests may use, and theirs when they name none
     * (`gateway/flow/bands.ts`).
     */
    band: text('band', { enum: BANDS }).notNull().default('default'),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('api_keys_secret_hash_idx').on(t.secretHash),
    index('api_keys_org_idx').on(t.orgId),
    check('api_keys_band_check', sql`${t.band} in ('interactive', 'default', 'background', 'batch')`),
  ],
);

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

/**
 * Conversations (`/v1/conversations`, and `conversation` on `/v1/responses`), each
 * organization's own. `next_position` is where the next item goes: an append moves it
 * in the one `update` that also checks the bounds, so two turns appended at once on
 * two replicas wait for each other's row lock and never take the same position.
 * `items` and `bytes` count what is stored (TOLLGATE_CONVERSATIONS_MAX_ITEMS and
 * _MAX_BYTES). A conversation is gone for reads once `expires_at` is past
 * (TOLLGATE_CONVERSATIONS_RETENTION_DAYS after its last change) and purged later.
 */
export const conversations = pgTable(
  'conversations',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    metadata: text('metadata_json').notNull(),
    items: integer('items').notNull().default(0),
    bytes: bigint('bytes', { mode: 'number' }).notNull().default(0),
    nextPosition: bigint('next_position', { mode: 'number' }).notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('conversations_org_idx').on(t.orgId), index('conversations_expiry_idx').on(t.expiresAt)],
);

/**
 * A conversation's items in order (`position`, never reused). `item_id` is not unique: a
 * client may send an item with an id it has sent before; a read or delete by id names all of them.
 */
export const conversationItems = pgTable(
  'conversation_items',
  {
    conversationId: text('conversation_id')
      .notNull()
      .references(() => conversations.id, { onDelete: 'cascade' }),
    position: bigint('position', { mode: 'number' }).notNull(),
    itemId: text('item_id').notNull(),
    item: text('item_json').notNull(),
    bytes: integer('bytes').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.conversationId, t.position] }),
    index('conversation_items_id_idx').on(t.conversationId, t.itemId),
  ],
);

/**
 * How many live conversations each organization has (TOLLGATE_CONVERSATIONS_ORG_MAX), moved with
 * its rows.
 */
export const conversationTotals = pgTable('conversation_totals', {
  orgId: text('org_id')
    .primaryKey()
    .references(() => organizations.id),
  conversations: integer('conversations').notNull().default(0),
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

export const STACK_VISIBILITIES = ['global', 'private'] as const;

/**
 * A template (stack) of the catalog: an OpenTofu/Terraform module as a .zip,
 * with what its manifest says. Global ones (added by platform admins) are for
 * everyone; private ones only for the user who added them (and platform admins).
 * A global name is unique platform-wide, a private one within its
 * organization, and no private stack shares a global one's name (checked by
 * `StackCatalog` under a lock on the name: an index cannot span both).
 */
export const stacks = pgTable(
  'stacks',
  {
    /**
     * The stack's own identity (`stk_…`): what its runs and states belong to, so a stack added
     * later under the same name is another stack.
     */
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    visibility: text('visibility', { enum: STACK_VISIBILITIES }).notNull(),
    /**
     * Who added it: the owner of a private stack; null for the global stacks shipped with Tollgate
     * (`stacks/`).
     */
    ownerId: text('owner_id').references(() => users.id),
    /**
     * The organization of a private stack (its owner's): the scope its name is unique in; null for
     * a global one.
     */
    orgId: text('org_id').references(() => organizations.id),
    title: text('title').notNull(),
    description: text('description').notNull().default(''),
    category: text('category').notNull(),
    icon: text('icon'),
    /** Hardware profiles it applies to; null: all. */
    applicableProfiles: jsonb('applicable_profiles').$type<string[] | null>(),
    inputs: jsonb('inputs')
      .$type<
        Array<{
          name: string;
          type: 'number' | 'string';
          required: boolean;
          default?: number | string;
          description?: string;
        }>
      >()
      .notNull(),
    /** The module's folder inside the zip ('' for the top). */
    root: text('root').notNull().default(''),
    /**
     * The .zip in the blob store (`shared/blobs/`), outside the database's heap; null only for a
     * row not yet copied there (`stacks/legacy-packages.ts`, at start-up).
     */
    packageBlobId: text('package_blob_id'),
    /** The .zip's size: what a user's stacks hold is counted by it. */
    packageBytes: integer('package_bytes').notNull(),
    packageSha256: text('package_sha256').notNull(),
    /** The .zip's bytes as rows held them before the blob store; null once copied there. */
    package: bytea('package'),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('stacks_global_name_idx')
      .on(t.name)
      .where(sql`${t.visibility} = 'global'`),
    uniqueIndex('stacks_private_name_idx')
      .on(t.orgId, t.name)
      .where(sql`${t.visibility} = 'private'`),
    index('stacks_owner_idx').on(t.ownerId),
    check('stacks_visibility_check', sql`${t.visibility} in ('global', 'private')`),
    check('stacks_scope_check', sql`(${t.visibility} = 'global') = (${t.orgId} is null)`),
  ],
);

/**
 * A kind of machine the operator offers: what a cluster is made of, and what the cost reports
 * price.
 */
export const hardwareProfiles = pgTable(
  'hardware_profiles',
  {
    name: text('name').primaryKey(),
    gpusPerNode: integer('gpus_per_node').notNull(),
    gpuModel: text('gpu_model').notNull().default(''),
    /** For display. */
    cpuCores: integer('cpu_cores').notNull().default(0),
    memoryGib: integer('memory_gib').notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [check('hardware_profiles_gpus_check', sql`${t.gpusPerNode} >= 0`)],
);

/** A machine of a profile, free or allocated to one cluster. */
export const nodes = pgTable(
  'nodes',
  {
    id: text('id').primaryKey(),
    profile: text('profile')
      .notNull()
      .references(() => hardwareProfiles.name),
    /** Where it is reached (host name or address), unique. */
    address: text('address').notNull(),
    /**
     * How the platform reaches it, e.g. `ssh://ops@10.0.0.5:22` (a note; `ssh_*` below is what it
     * uses).
     */
    access: text('access').notNull().default(''),
    /**
     * The operator's account the platform logs in as to install and remove clusters' keys; null:
     * the platform has no access.
     */
    sshUser: text('ssh_user'),
    sshPort: integer('ssh_port'),
    /** The account runs log in as, whose `authorized_keys` gets each cluster's key. */
    runUser: text('run_user'),
    /**
     * The operator's private key for `ssh_user`, sealed with TOLLGATE_NODE_CREDENTIALS_KEY
     * (AES-256-GCM); never returned or logged.
     */
    sshCredential: text('ssh_credential'),
    /**
     * The node's SSH host key (`ssh-ed25519 AAAA…`) as pinned when the node was added, and its
     * SHA256 fingerprint.
     */
    hostKey: text('host_key'),
    hostKeyFingerprint: text('host_key_fingerprint'),
    /** The cluster it is allocated to; null: free. */
    clusterId: text('cluster_id'),
    /** A deleted cluster whose key is still on this node: not allocatable until it is removed. */
    releasingClusterId: text('releasing_cluster_id'),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('nodes_address_idx').on(t.address), index('nodes_free_idx').on(t.profile, t.clusterId)],
);

export const NODE_KEY_ACTIONS = ['install', 'remove'] as const;
export const NODE_KEY_STATES = ['pending', 'done', 'failed'] as const;

/**
 * A cluster's key on one of its nodes: installed when the cluster is
 * created, removed when it is deleted, retried with backoff until done.
 * Whoever works on a row claims it until `claimed_until`, so two gateway
 * processes never edit one node's `authorized_keys` at once.
 */
export const clusterNodeKeys = pgTable(
  'cluster_node_keys',
  {
    clusterId: text('cluster_id')
      .notNull()
      .references(() => clusters.id),
    nodeId: text('node_id')
      .notNull()
      .references(() => nodes.id),
    action: text('action', { enum: NODE_KEY_ACTIONS }).notNull(),
    state: text('state', { enum: NODE_KEY_STATES }).notNull().default('pending'),
    error: text('error'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull().defaultNow(),
    claimedUntil: timestamp('claimed_until', { withTimezone: true }),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.clusterId, t.nodeId] }),
    index('cluster_node_keys_due_idx').on(t.state, t.nextAttemptAt),
  ],
);

export const CLUSTER_STATES = ['running', 'deleted'] as const;

/** An organization's cluster: nodes of one profile, allocated from its creation to its deletion. */
export const clusters = pgTable(
  'clusters',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    name: text('name').notNull(),
    profile: text('profile')
      .notNull()
      .references(() => hardwareProfiles.name),
    publicDomain: text('public_domain').notNull(),
    state: text('state', { enum: CLUSTER_STATES }).notNull().default('running'),
    createdBy: text('created_by').references(() => users.id),
    createdAt: createdAt(),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
  },
  (t) => [
    index('clusters_org_idx').on(t.orgId),
    check('clusters_state_check', sql`${t.state} in ('running', 'deleted')`),
    // A public domain belongs to one live cluster platform-wide (stored lower-case).
    uniqueIndex('clusters_live_public_domain_idx')
      .on(t.publicDomain)
      .where(sql`${t.state} = 'running'`),
  ],
);

/**
 * Which node was a cluster's, from when to when (exact to the microsecond):
 * what the cost reports meter. A cluster's rows are closed (`released_at`)
 * when it is deleted; a deleted cluster stays in the history.
 */
export const nodeAllocations = pgTable(
  'node_allocations',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    clusterId: text('cluster_id')
      .notNull()
      .references(() => clusters.id),
    nodeId: text('node_id')
      .notNull()
      .references(() => nodes.id),
    profile: text('profile').notNull(),
    allocatedAt: timestamp('allocated_at', { withTimezone: true }).notNull().defaultNow(),
    releasedAt: timestamp('released_at', { withTimezone: true }),
  },
  (t) => [index('node_allocations_cluster_idx').on(t.clusterId), index('node_allocations_time_idx').on(t.allocatedAt)],
);

/** A run's states: queued, being applied by a worker, and the three ends. */
export const RUN_STATES = ['QUEUED', 'RUNNING', 'APPLIED', 'FAILED', 'CANCELED'] as const;
export type RunState = (typeof RUN_STATES)[number];

/**
 * A stack applied to a cluster (or one of its nodes): queued by a member of
 * the cluster's organization, claimed by one worker (`FOR UPDATE SKIP
 * LOCKED`), and kept with its exit status, outputs, timings and log.
 */
export const runs = pgTable(
  'runs',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    clusterId: text('cluster_id')
      .notNull()
      .references(() => clusters.id),
    /**
     * The stack by name, as it was queued (no foreign key: a run outlives its stack's deletion),
     * its id, and the package it was queued with.
     */
    stackName: text('stack_name').notNull(),
    /** Null only for runs queued before stacks had ids whose stack had gone by then. */
    stackId: text('stack_id'),
    packageSha256: text('package_sha256').notNull(),
    /** The one node targeted; null: the whole cluster. */
    nodeId: text('node_id').references(() => nodes.id),
    /** The inputs after validation, defaults filled in. */
    inputs: jsonb('inputs').$type<Record<string, number | string>>().notNull(),
    state: text('state', { enum: RUN_STATES }).notNull().default('QUEUED'),
    createdBy: text('created_by').references(() => users.id),
    createdAt: createdAt(),
    startedAt: timestamp('started_at', { withTimezone: true }),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    /**
     * The worker applying it, and until when its claim holds unless renewed (a dead worker's run
     * fails after it).
     */
    claimedBy: text('claimed_by'),
    leaseUntil: timestamp('lease_until', { withTimezone: true }),
    cancelRequestedAt: timestamp('cancel_requested_at', { withTimezone: true }),
    exitCode: integer('exit_code'),
    /** Why a run failed or was canceled, in words for people. */
    failure: text('failure'),
    outputs: jsonb('outputs').$type<Record<string, unknown>>(),
    publicUrl: text('public_url'),
    /**
     * Where requests for the public URL's host go: the node's address and the exposed port
     * (`10.0.0.5:3000`).
     */
    webTarget: text('web_target'),
  },
  (t) => [
    index('runs_cluster_idx').on(t.clusterId, t.createdAt),
    index('runs_queue_idx').on(t.state, t.createdAt),
    uniqueIndex('runs_one_active_idx')
      .on(t.clusterId, t.stackName)
      .where(sql`${t.state} in ('QUEUED', 'RUNNING')`),
    check('runs_state_check', sql`${t.state} in ('QUEUED', 'RUNNING', 'APPLIED', 'FAILED', 'CANCELED')`),
  ],
);

/** A run's log, stored as it is written (secrets already masked), in order. */
export const runLogChunks = pgTable(
  'run_log_chunks',
  {
    runId: text('run_id')
      .notNull()
      .references(() => runs.id),
    seq: integer('seq').notNull(),
    data: text('data').notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('run_log_chunks_run_seq_idx').on(t.runId, t.seq)],
);

/**
 * Each cluster's access identity: an SSH key pair, made with the cluster;
 * the private key is stored sealed and reaches runs only as a file. Kept
 * only when the gateway has TOLLGATE_NODE_CREDENTIALS_KEY to seal it with.
 */
export const clusterKeys = pgTable('cluster_keys', {
  clusterId: text('cluster_id')
    .primaryKey()
    .references(() => clusters.id),
  publicKey: text('public_key').notNull(),
  /**
   * The private key sealed with TOLLGATE_NODE_CREDENTIALS_KEY (AES-256-GCM), bound to the cluster's
   * id; never returned or logged.
   */
  sealedPrivateKey: text('sealed_private_key'),
  /**
   * A private key in clear, as gateways kept them before they were sealed: sealed (and this
   * emptied) at the first start with the key.
   */
  privateKey: text('private_key'),
  createdAt: createdAt(),
});

/**
 * The OpenTofu state of a stack on a cluster, restored before each run and
 * kept after it. Keyed on the stack's id, not its name: a stack added again
 * under a deleted one's name starts with no state.
 */
export const stackStates = pgTable(
  'stack_states',
  {
    clusterId: text('cluster_id')
      .notNull()
      .references(() => clusters.id),
    /**
     * No foreign key: the state of a deleted stack is kept (what it made may still run on the
     * cluster).
     */
    stackId: text('stack_id').notNull(),
    state: bytea('state').notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('stack_states_key_idx').on(t.clusterId, t.stackId)],
);

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
