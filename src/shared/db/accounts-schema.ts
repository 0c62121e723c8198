import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { createdAt, money } from './columns.js';

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
