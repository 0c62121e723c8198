import { and, eq, isNull, sql, type SQL } from 'drizzle-orm';
import type { AnyPgColumn, PgTable } from 'drizzle-orm/pg-core';

/** Whose rows a key sees (files, batches): its organization's, of its project (null: of no project). */
export interface RowOwner {
  orgId: string;
  projectId: string | null;
}

/** A table whose rows belong to an organization and, perhaps, one of its projects. */
interface OwnedTable {
  orgId: AnyPgColumn;
  projectId: AnyPgColumn;
}

/** A table listed newest (or oldest) first, its id breaking a tie in `created_at`. */
type ListedTable = PgTable & {
  id: AnyPgColumn;
  createdAt: AnyPgColumn;
};

/**
 * The owner's rows of `table`: its organization's, of the key's project, or of no project for a key
 * of none (a key of no project does not see its organization's projects' rows).
 *
 * @example
 * db.select().from(files).where(and(eq(files.id, id), ownedBy(files, owner)));
 */
export function ownedBy(table: OwnedTable, owner: RowOwner): SQL {
  return and(
    eq(table.orgId, owner.orgId),
    owner.projectId === null ? isNull(table.projectId) : eq(table.projectId, owner.projectId),
  )!;
}

/**
 * The keyset cursor of a page ordered by (`created_at`, `id`): the rows past the row `afterId`, in
 * `order`. The cursor's row is read in the database, not passed from here: a JS `Date` holds
 * milliseconds and the column microseconds, so a cursor made in JS would repeat or skip rows.
 *
 * @example
 * conditions.push(keysetAfter(batches, after.id, 'desc'));
 */
export function keysetAfter(table: ListedTable, afterId: string, order: 'asc' | 'desc'): SQL {
  const cursor = sql`(select ${table.createdAt}, ${table.id} from ${table} where ${table.id} = ${afterId})`;
  return order === 'desc'
    ? sql`(${table.createdAt}, ${table.id}) < ${cursor}`
    : sql`(${table.createdAt}, ${table.id}) > ${cursor}`;
}
