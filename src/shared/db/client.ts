import { existsSync } from 'node:fs';
import { cp, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { templateFolder } from './pglite-template.js';
import * as schema from './schema.js';

/** The one database type the rest of the code sees, whichever driver is under it. */
export type Database = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface Store {
  db: Database;
  /**
   * Reports' and exports' own connections (`reports`): a report that is slow or stuck waits for
   * these, never for the request path's. On PGlite, the same one connection as `db`.
   */
  reports: Database;
  /** 'postgres' or 'pglite', for the start-up line. */
  driver: 'postgres' | 'pglite';
  close(): Promise<void>;
}

export interface OpenStoreOptions {
  /** PostgreSQL connection string; without it, PGlite in `dataDir`. */
  databaseUrl?: string;
  /** Where PGlite keeps its files; `memory://` keeps them in memory. */
  dataDir: string;
  /** Connections in the postgres.js pool. */
  poolSize?: number;
  /**
   * On PostgreSQL, the reports' pool: its connections and each statement's longest run (default 4
   * and 30 s).
   */
  reports?: { poolSize: number; statementTimeoutMs: number };
}

/**
 * The committed migrations: `drizzle/` at the package root, found from `src/shared/db/` (tsx) or
 * from the bundle in `dist/`.
 */
const migrationsFolder = findPackageFolder('drizzle', path.dirname(fileURLToPath(import.meta.url)));

function findPackageFolder(name: string, from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, name, 'meta', '_journal.json'))) return path.join(dir, name);
    if (dir === path.dirname(dir)) throw new Error(`no ${name}/ folder with migrations above ${from}`);
  }
}

/**
 * Runs the built `db/pglite-setup.js` in a worker thread and waits for it to
 * end. Unbuilt (`npm run dev` under tsx, whose loader a worker does not
 * get), the set-up runs in this thread instead: same files, more memory.
 */
async function setUpInWorker(location: string): Promise<void> {
  const built = path.join(path.dirname(fileURLToPath(import.meta.url)), 'db', 'pglite-setup.js');
  if (!existsSync(built)) {
    const setup = new PGlite(location);
    await migratePglite(drizzlePglite(setup, { schema }), { migrationsFolder });
    await setup.close();
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const worker = new Worker(built, { workerData: { location, migrationsFolder } });
    worker.once('error', reject);
    worker.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`PGlite set-up ended with code ${code}`)),
    );
  });
}

/**
 * PGlite's own start parameters (its `defaultStartParams` in 0.5), plus a
 * small buffer pool: PostgreSQL's default 128 MB of shared buffers is most of
 * what an embedded gateway's memory grows to (WebAssembly memory, once touched,
 * is never given back), and the request path does not read the database in
 * steady state. 8 MB holds the catalog and the hot tables of a small
 * deployment; PostgreSQL is the choice for a large one.
 */
const PGLITE_START_PARAMS = [
  '--single',
  '-F',
  '-O',
  '-j',
  ...[
    'search_path=public',
    'exit_on_error=false',
    'log_checkpoints=false',
    'max_worker_processes=0',
    'max_parallel_workers=0',
    'max_parallel_workers_per_gather=0',
    'io_method=sync',
    'max_parallel_maintenance_workers=0',
  ].flatMap((setting) => ['-c', setting]),
  ...[
    'shared_buffers=8MB',
    'temp_buffers=1MB',
    'work_mem=2MB',
    'maintenance_work_mem=8MB',
    'wal_buffers=256kB',
  ].flatMap((setting) => ['-c', setting]),
];

// Any fixed number: replicas starting together take turns running migrations.
const MIGRATION_LOCK_ID = 7_110_472_001;

/**
 * Opens the store and brings its schema up to date.
 *
 * @example
 * const store = await openStore({ databaseUrl: process.env.DATABASE_URL, dataDir: '.tollgate' });
 * await store.close();
 */
export async function openStore({
  databaseUrl,
  dataDir,
  poolSize = 10,
  reports = { poolSize: 4, statementTimeoutMs: 30_000 },
}: OpenStoreOptions): Promise<Store> {
  if (databaseUrl) {
    // A short connect timeout: an unreachable database must answer 503 quickly, not hold requests
    // for 30 s. No `fetch_types`: postgres.js reads the array types on each new connection in a
    // promise nobody awaits, so a connection cut then (a restart, a failover) is an unhandled
    // rejection that ends the process (porsager/postgres#1192). The one array the store reads,
    // `walletSnapshot`'s, is parsed from its text form.
    const client = postgres(databaseUrl, {
      max: poolSize,
      connect_timeout: 3,
      fetch_types: false,
      onnotice: () => {},
    });
    const db = drizzlePostgres(client, { schema });
    try {
      try {
        await db.execute(sql`select pg_advisory_lock(${MIGRATION_LOCK_ID})`);
        await migratePostgres(db, { migrationsFolder });
      } finally {
        await db.execute(sql`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`).catch(() => {});
      }
    } catch (error) {
      // A store that could not open leaves no connection behind.
      await client.end({ timeout: 1 }).catch(() => {});
      throw error;
    }
    // Opened only now: it runs no migration. Its statement timeout is set at connection
    // (PostgreSQL's own), so a report past it ends in the database too, not only in the gateway's
    // wait.
    const reportsClient = postgres(databaseUrl, {
      max: reports.poolSize,
      connect_timeout: 3,
      fetch_types: false,
      onnotice: () => {},
      connection: { statement_timeout: reports.statementTimeoutMs, application_name: 'tollgate-reports' },
    });
    const reportsDb = drizzlePostgres(reportsClient, { schema }) as unknown as Database;
    return {
      db: db as unknown as Database,
      reports: reportsDb,
      driver: 'postgres',
      close: async () => {
        await Promise.all([client.end({ timeout: 5 }), reportsClient.end({ timeout: 5 })]);
      },
    };
  }
  const location = dataDir === 'memory://' ? 'memory://' : path.join(dataDir, 'pglite');
  if (location !== 'memory://') {
    const fresh = !existsSync(path.join(location, 'PG_VERSION'));
    await mkdir(location, { recursive: true });
    // A new folder is a copy of the build's template (`pglite-template.ts`) when there is one.
    // Otherwise: creating a database (initdb) and migrating it grow PGlite's WebAssembly memory to
    // about 800 MB, and WebAssembly memory never shrinks: both run in a worker thread that then
    // ends, taking that memory with it, and the gateway serves from an instance opened on the
    // finished files.
    if (fresh) {
      const template = await templateFolder(migrationsFolder, path.resolve(migrationsFolder, '..', 'dist'));
      if (existsSync(path.join(template, 'PG_VERSION'))) await cp(template, location, { recursive: true });
      else await setUpInWorker(location);
    }
  }
  const client = new PGlite(location, { startParams: PGLITE_START_PARAMS });
  const db = drizzlePglite(client, { schema });
  await migratePglite(db, { migrationsFolder });
  // PGlite is one connection in this process: reports share it, and wait their turn with the
  // request path's statements (no statement timeout applies). A deployment whose reports are heavy
  // runs on PostgreSQL.
  return {
    db: db as unknown as Database,
    reports: db as unknown as Database,
    driver: 'pglite',
    close: () => client.close(),
  };
}
