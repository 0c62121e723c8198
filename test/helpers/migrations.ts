import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The checkout's migrations, as the gateway runs them. */
export const MIGRATIONS = path.resolve(import.meta.dirname, '..', '..', 'drizzle');

/**
 * A copy of the migrations (in a new temporary folder) whose journal stops
 * before the one tagged `tag`, for a test that fills a database as it was
 * then and runs the rest on it.
 *
 * @example
 * const before = await migrationsBefore('0022_usage_rollups');
 */
export async function migrationsBefore(tag: string): Promise<string> {
  const folder = await mkdtemp(path.join(tmpdir(), 'tollgate-migrations-'));
  await cp(MIGRATIONS, folder, { recursive: true });
  const journalFile = path.join(folder, 'meta', '_journal.json');
  const journal = JSON.parse(await readFile(journalFile, 'utf8')) as { entries: Array<{ tag: string }> };
  const stop = journal.entries.findIndex((entry) => entry.tag === tag);
  if (stop < 0) throw new Error(`no migration tagged ${tag} in ${MIGRATIONS}`);
  journal.entries = journal.entries.slice(0, stop);
  await writeFile(journalFile, JSON.stringify(journal));
  return folder;
}
