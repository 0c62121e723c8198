import { sql } from 'drizzle-orm';
import { check, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { bytea } from './bytea.js';
import { createdAt } from './columns.js';
import { organizations, users } from './accounts-schema.js';

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
