import { Redis } from 'ioredis';
import postgres from 'postgres';
import { runTemplate } from './postgres-template.js';
import { skippedWithout } from './skips.js';

/**
 * Tests that need a real service skip, with a line saying why, when it does
 * not answer; with REQUIRE_SERVICES=1 (as CI sets it) they fail instead.
 */
export const requireServices = process.env.REQUIRE_SERVICES === '1';

/** The server tests create their databases on. */
export const postgresAdminUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

let postgresCheck: Promise<boolean> | undefined;

export function postgresAvailable(): Promise<boolean> {
  postgresCheck ??= (async () => {
    const sql = postgres(postgresAdminUrl, { max: 1, connect_timeout: 3, onnotice: () => {} });
    try {
      await sql`select 1`;
      return true;
    } catch (error) {
      if (requireServices)
        throw new Error(
          `REQUIRE_SERVICES=1 but PostgreSQL at ${redact(postgresAdminUrl)} does not answer: ${(error as Error).message}`,
          { cause: error },
        );
      console.warn(
        `skipping PostgreSQL tests: ${redact(postgresAdminUrl)} does not answer (${(error as Error).message})`,
      );
      return false;
    } finally {
      await sql.end({ timeout: 1 });
    }
  })();
  return postgresCheck;
}

/**
 * Prefix of every database the tests create (`TEST_DATABASE_PREFIX`, default
 * `tollgate_test_`), so runs sharing a server can tell theirs apart and CI can
 * check that none is left. Lower-case letters, digits and `_` only.
 */
export const testDatabasePrefix = process.env.TEST_DATABASE_PREFIX ?? 'tollgate_test_';
if (!/^[a-z_][a-z0-9_]{0,40}$/.test(testDatabasePrefix))
  throw new Error(`TEST_DATABASE_PREFIX must be lower-case letters, digits and _: ${testDatabasePrefix}`);

/**
 * A fresh database of its own for one test file; `drop` removes it. Its name
 * carries the creating process's pid and the test file's name, so a database
 * left behind says where it came from (and `dropOrphanedTestDatabases` can
 * tell it is nobody's any more).
 *
 * It is a copy of the run's migrated template (`postgres-template.ts`), so the
 * store that opens it finds no migration to run: a copy takes a fraction of the
 * time the 34 migrations do. `{ empty: true }` gives a database with no schema
 * at all, for the tests of migrations themselves.
 */
export async function createTestDatabase(
  options: { empty?: boolean } = {},
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${testDatabasePrefix}${process.pid}_${callerSlug()}_${Math.random().toString(36).slice(2, 8)}`;
  const template = options.empty ? null : await runTemplate();
  const admin = postgres(postgresAdminUrl, { max: 1, onnotice: () => {} });
  try {
    await retriedWhileInUse(() => admin.unsafe(`create database ${name}${template ? ` template ${template}` : ''}`));
  } finally {
    await admin.end();
  }
  return { url: databaseUrl(name), drop: () => dropDatabase(name) };
}

/** The URL of database `name` on the test server. */
export function databaseUrl(name: string): string {
  const url = new URL(postgresAdminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Runs `statement` again while PostgreSQL says a database it needs is in use
 * (55006, object_in_use): a drop while a pool reconnects in the instant between,
 * a copy while the session that made the template is still ending. Gives up
 * after about 5 s.
 */
async function retriedWhileInUse(statement: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await statement();
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '55006' || attempt >= 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/**
 * Drops a test database, closing its sessions first (`with (force)`), again
 * while a process reconnecting in the instant between keeps it in use.
 */
export async function dropDatabase(name: string): Promise<void> {
  const sql = postgres(postgresAdminUrl, { max: 1, onnotice: () => {} });
  try {
    await retriedWhileInUse(() => sql.unsafe(`drop database if exists ${name} with (force)`));
  } finally {
    await sql.end();
  }
}

/**
 * The test file that called into this module, as `a-z0-9` (at most 24 characters), for a database's
 * name.
 */
function callerSlug(): string {
  const file =
    (new Error().stack ?? '')
      .split('\n')
      .map((line) => /([\w.-]+)\.test\.ts/.exec(line)?.[1])
      .find(Boolean) ?? 'unknown';
  return file
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '')
    .slice(0, 24);
}

/**
 * Drops the test databases whose creating process is gone (a file that did
 * not drop its own), naming them, so a run leaves none behind and the file at
 * fault is still known. Run once every test file is done (global teardown).
 */
export async function dropOrphanedTestDatabases(): Promise<string[]> {
  const sql = postgres(postgresAdminUrl, { max: 1, onnotice: () => {}, connect_timeout: 2 });
  let names: string[];
  try {
    const rows = await sql<
      Array<{ datname: string }>
    >`select datname from pg_database where starts_with(datname, ${testDatabasePrefix})`;
    names = rows
      .map((row) => row.datname)
      .filter((name) => !processAlive(Number(name.slice(testDatabasePrefix.length).split('_')[0])));
  } finally {
    await sql.end();
  }
  for (const name of names) await dropDatabase(name);
  return names;
}

function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function redact(url: string): string {
  return url.replace(/:\/\/([^:@]+):[^@]+@/, '://$1:***@');
}

/** The Redis tests use, each with a key prefix of its own. */
export const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

let redisCheck: Promise<boolean> | undefined;

export function redisAvailable(): Promise<boolean> {
  redisCheck ??= (async () => {
    const redis = new Redis(redisUrl, {
      lazyConnect: true,
      connectTimeout: 2_000,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    try {
      await redis.connect();
      await redis.ping();
      return true;
    } catch (error) {
      if (requireServices)
        throw new Error(`REQUIRE_SERVICES=1 but Redis at ${redisUrl} does not answer: ${(error as Error).message}`, {
          cause: error,
        });
      console.warn(`skipping Redis tests: ${redisUrl} does not answer (${(error as Error).message})`);
      return false;
    } finally {
      redis.disconnect();
    }
  })();
  return redisCheck;
}

/**
 * For a file whose every test needs both PostgreSQL and Redis: true when both
 * answer; otherwise false, with a skipped test named for `what` and the
 * service that did not answer. Under REQUIRE_SERVICES=1 a missing
 * one fails the file instead (as `postgresAvailable`/`redisAvailable` do).
 *
 * @example
 * const ready = await postgresAndRedisOrSkip('the chaos test');
 * describe.skipIf(!ready)('chaos', () => { ... });
 */
export async function postgresAndRedisOrSkip(what: string): Promise<boolean> {
  const [hasPostgres, hasRedis] = await Promise.all([postgresAvailable(), redisAvailable()]);
  const absent = [hasPostgres ? null : 'PostgreSQL', hasRedis ? null : 'Redis'].filter((name) => name !== null);
  skippedWithout(
    absent.length === 0
      ? null
      : `${what}: ${absent.join(' and ')} ${absent.length > 1 ? 'do' : 'does'} not answer (both are needed)`,
  );
  return absent.length === 0;
}

/** A Redis key prefix no other test uses. */
export function uniqueRedisPrefix(): string {
  return `tollgate-test:${process.pid}:${Math.random().toString(36).slice(2, 10)}:`;
}

/** Removes every key under `prefix` from the test Redis (after a test that wrote there). */
export async function deleteRedisPrefix(prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/**
 * A fixed window's count as the gateway keeps it in Redis under `prefix`
 * (`shared/db/window-counter.ts`), 0 when there is none.
 */
export async function redisWindowCount(prefix: string, key: string): Promise<number> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  try {
    return Number((await redis.get(`${prefix}window:${key}`)) ?? 0);
  } finally {
    redis.disconnect();
  }
}

/**
 * Wallet holds left in Redis under `prefix` (the admission gate's `{org:<org>}:held` hashes), for
 * an org or all.
 */
export async function redisHolds(prefix: string, orgId?: string): Promise<number> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  try {
    let count = 0;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}{org:${orgId ?? '*'}}:held`, 'COUNT', 500);
      cursor = next;
      for (const key of keys) count += await redis.hlen(key);
    } while (cursor !== '0');
    return count;
  } finally {
    redis.disconnect();
  }
}
