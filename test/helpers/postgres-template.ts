import path from 'node:path';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { inject } from 'vitest';
import { databaseUrl, dropDatabase, postgresAdminUrl, testDatabasePrefix } from './services.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * The name of the run's migrated database each test database is copied from (`CREATE DATABASE
     * … TEMPLATE`), given by the global setup; null when PostgreSQL did not answer then.
     */
    postgresTemplate: string | null;
  }
}

/** The checkout's own migrations: the template is made from what is under test. */
const migrationsFolder = path.resolve(import.meta.dirname, '..', '..', 'drizzle');

/**
 * The template's name for a run whose runner has pid `pid`: it carries the pid as every test
 * database's name does, so `dropOrphanedTestDatabases` and CI's leftover check see it if the run
 * dies before its teardown drops it.
 */
export function templateName(pid: number): string {
  return `${testDatabasePrefix}${pid}_template`;
}

let template: Promise<string | null> | undefined;

/**
 * The run's template, made by the first test (in whichever worker process) that asks for a
 * database, so a run with no PostgreSQL test pays nothing for it; null outside a vitest run with
 * the global setup, or when it could not be made (then each test database runs the migrations
 * itself, and says how they fail).
 */
export function runTemplate(): Promise<string | null> {
  template ??= (async () => {
    let name: string | null;
    try {
      name = inject('postgresTemplate');
    } catch {
      return null; // not under vitest's global setup (a bench script using the helpers)
    }
    if (name === null) return null;
    try {
      await ensureTemplate(name);
      return name;
    } catch (error) {
      console.warn(`no PostgreSQL template database: test databases run the migrations themselves (${String(error)})`);
      return null;
    }
  })();
  return template;
}

/**
 * Makes template `name` unless another worker did: the check and the making hold an advisory lock
 * (per template), so two workers asking at once make it once and the second waits for it whole.
 */
async function ensureTemplate(name: string): Promise<void> {
  // max 1: the lock, the check and the unlock are one session's.
  const admin = postgres(postgresAdminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin`select pg_advisory_lock(hashtext(${name}))`;
    const [exists] = await admin`select 1 from pg_database where datname = ${name}`;
    if (!exists) await createTemplateDatabase(name, admin);
  } finally {
    await admin`select pg_advisory_unlock(hashtext(${name}))`.catch(() => {});
    await admin.end();
  }
}

/**
 * Creates database `name` and runs every migration of `drizzle/` on it, then closes its
 * connection: PostgreSQL refuses to copy a database anyone is connected to. Made on each run
 * (about as long as one test database's migrations), so it is never older than the checkout.
 */
async function createTemplateDatabase(name: string, admin: postgres.Sql): Promise<void> {
  await admin.unsafe(`create database ${name}`);
  const sql = postgres(databaseUrl(name), { max: 1, onnotice: () => {} });
  try {
    await migrate(drizzle(sql), { migrationsFolder });
  } catch (error) {
    await sql.end();
    await dropDatabase(name);
    throw error;
  }
  await sql.end();
}
