import path from 'node:path';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { databaseUrl, dropDatabase, postgresAdminUrl, testDatabasePrefix } from './services.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * The migrated database each test database is copied from (`CREATE DATABASE … TEMPLATE`),
     * made by the global setup; null when PostgreSQL did not answer or the migrations failed
     * there (then each test database is migrated by whoever opens it, as it always could be).
     */
    postgresTemplate: string | null;
  }
}

/** The checkout's own migrations: the template is made from what is under test. */
const migrationsFolder = path.resolve(import.meta.dirname, '..', '..', 'drizzle');

/**
 * Makes the run's template database: created empty, then every migration of `drizzle/` run on it,
 * and its connection closed, since PostgreSQL refuses to copy a database anyone is connected to.
 * Made again on each run (about as long as one test database's migrations), so it can never be
 * older than the checkout. Its name carries this process's pid like every test database's, so
 * `dropOrphanedTestDatabases` and CI's leftover check see it if the run dies before `drop`.
 */
export async function createTemplateDatabase(): Promise<{ name: string; drop: () => Promise<void> }> {
  const name = `${testDatabasePrefix}${process.pid}_template`;
  const admin = postgres(postgresAdminUrl, { max: 1, onnotice: () => {} });
  try {
    // A template left by an earlier run in this pid (a reused pid in a container) is not trusted.
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const drop = () => dropDatabase(name);
  const sql = postgres(databaseUrl(name), { max: 1, onnotice: () => {} });
  try {
    await migrate(drizzle(sql), { migrationsFolder });
  } catch (error) {
    await sql.end();
    await drop();
    throw error;
  }
  await sql.end();
  return { name, drop };
}
