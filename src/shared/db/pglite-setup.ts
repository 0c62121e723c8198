import { workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';

// Creates and migrates a PGlite data folder, in a worker thread of its own
// (`client.ts` runs it): initdb and the migrations grow PGlite's WebAssembly
// memory to about 800 MB, which never shrinks within a thread, but is freed
// with the thread when it ends.

const { location, migrationsFolder } = workerData as { location: string; migrationsFolder: string };
const setup = new PGlite(location);
await migrate(drizzle(setup), { migrationsFolder });
await setup.close();
