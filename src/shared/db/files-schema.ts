import { bigint, index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { organizations } from './accounts-schema.js';

/**
 * An uploaded file (`/v1/files`): its bytes are a blob of the blob store (`blob_id`), never in this
 * row. It belongs to its organization and the key's project (null: a key of no project).
 */
export const files = pgTable(
  'files',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    projectId: text('project_id'),
    purpose: text('purpose').notNull(),
    filename: text('filename').notNull(),
    bytes: bigint('bytes', { mode: 'number' }).notNull(),
    /** A batch file's requests (its lines that are not blank); null for other purposes. */
    lines: integer('lines'),
    blobId: text('blob_id').notNull(),
    sha256: text('sha256').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('files_org_created_idx').on(t.orgId, t.createdAt, t.id)],
);

/**
 * An organization's stored files and their bytes, bounded by TOLLGATE_FILES_ORG_MAX and
 * _ORG_MAX_BYTES.
 */
export const fileTotals = pgTable('file_totals', {
  orgId: text('org_id')
    .primaryKey()
    .references(() => organizations.id),
  files: integer('files').notNull().default(0),
  bytes: bigint('bytes', { mode: 'number' }).notNull().default(0),
});
