import { bigint, boolean, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { bytea } from './bytea.js';

/**
 * A blob of the PostgreSQL blob store (`shared/blobs/database-store.ts`): written as chunks, then
 * marked `complete` with its size and hash. One not complete a day after it began is an upload that
 * died: swept.
 */
export const blobs = pgTable('blobs', {
  id: text('id').primaryKey(),
  bytes: bigint('bytes', { mode: 'number' }).notNull().default(0),
  sha256: text('sha256'),
  complete: boolean('complete').notNull().default(false),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

/** A blob's bytes, in order: `seq` from 0, each chunk 1 MiB but the last. */
export const blobChunks = pgTable(
  'blob_chunks',
  {
    blobId: text('blob_id')
      .notNull()
      .references(() => blobs.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    data: bytea('data').notNull(),
  },
  (t) => [primaryKey({ columns: [t.blobId, t.seq] })],
);
