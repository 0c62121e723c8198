import { Redis } from 'ioredis';
import postgres from 'postgres';

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
      if (requireServices) throw new Error(`REQUIRE_SERVICES=1 but PostgreSQL at ${redact(postgresAdminUrl)} does not answer: ${(error as Error).message}`);
      console.warn(`skipping PostgreSQL tests: ${redact(postgresAdminUrl)} does not answer (${(error as Error).message})`);
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
if (!/^[a-z_][a-z0-9_]{0,40}$/.test(testDatabasePrefix)) throw new Error(`TEST_DATABASE_PREFIX must be lower-case letters, digits and _: ${testDatabasePrefix}`);

/** A fresh database of its own for one test file; `drop` removes it. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${testDatabasePrefix}${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = postgres(postgresAdminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = new URL(postgresAdminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const sql = postgres(postgresAdminUrl, { max: 1, onnotice: () => {} });
      await sql.unsafe(`drop database if exists ${name} with (force)`);
      await sql.end();
    },
  };
}

function redact(url: string): string {
  return url.replace(/:\/\/([^:@]+):[^@]+@/, '://$1:***@');
}

/** The Redis tests use, each with a key prefix of its own. */
export const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

let redisCheck: Promise<boolean> | undefined;

export function redisAvailable(): Promise<boolean> {
  redisCheck ??= (async () => {
    const redis = new Redis(redisUrl, { lazyConnect: true, connectTimeout: 2_000, maxRetriesPerRequest: 0, retryStrategy: () => null });
    try {
      await redis.connect();
      await redis.ping();
      return true;
    } catch (error) {
      if (requireServices) throw new Error(`REQUIRE_SERVICES=1 but Redis at ${redisUrl} does not answer: ${(error as Error).message}`);
      console.warn(`skipping Redis tests: ${redisUrl} does not answer (${(error as Error).message})`);
      return false;
    } finally {
      redis.disconnect();
    }
  })();
  return redisCheck;
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
