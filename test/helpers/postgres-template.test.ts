import { readFile } from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/shared/db/client.js';
import { MIGRATIONS } from './migrations.js';
import { createTestDatabase, postgresAvailable } from './services.js';
import { skippedWithout } from './skips.js';

const hasPostgres = await postgresAvailable();
skippedWithout(hasPostgres ? null : 'the template database tests need PostgreSQL');

/**
 * How many migrations drizzle has recorded as run on the database at `url` (0 with no record at
 * all).
 */
async function migrationsRun(url: string): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [found] = await sql<
      Array<{ table: string | null }>
    >`select to_regclass('drizzle.__drizzle_migrations') as table`;
    if (!found?.table) return 0;
    const [run] = await sql<Array<{ count: number }>>`select count(*)::int as count from drizzle.__drizzle_migrations`;
    return run?.count ?? 0;
  } finally {
    await sql.end();
  }
}

describe.runIf(hasPostgres)('test databases copied from the run’s migrated template', () => {
  it('starts migrated, and the store that opens it has nothing to run', async () => {
    const journal = JSON.parse(await readFile(path.join(MIGRATIONS, 'meta', '_journal.json'), 'utf8')) as {
      entries: unknown[];
    };
    const database = await createTestDatabase();
    try {
      expect(await migrationsRun(database.url)).toBe(journal.entries.length);
      const store = await openStore({ databaseUrl: database.url, dataDir: 'memory://' });
      await store.close();
      expect(await migrationsRun(database.url)).toBe(journal.entries.length);
    } finally {
      await database.drop();
    }
  });

  it('is empty when asked to be, for the tests of migrations themselves', async () => {
    const database = await createTestDatabase({ empty: true });
    try {
      expect(await migrationsRun(database.url)).toBe(0);
    } finally {
      await database.drop();
    }
  });
});
