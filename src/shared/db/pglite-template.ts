import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';

/**
 * A PGlite data folder created and migrated once, at build time
 * (`npm run build`, which `npm ci` and `npm start` run), that a first start
 * copies instead of running initdb and every migration: about 5 s and 800 MB
 * of WebAssembly memory saved on the embedded gateway's first start. Kept
 * under `dist/pglite-template/<hash of the migrations>/`, so a changed
 * migration makes a new one; `openStore` falls back to creating the folder
 * when there is none.
 *
 * `make-pglite-template.ts` is the build step.
 */
export async function templateFolder(migrationsFolder: string, distFolder: string): Promise<string> {
  const journal = await readFile(path.join(migrationsFolder, 'meta', '_journal.json'));
  const hash = createHash('sha256').update(journal);
  for (const file of (await readdir(migrationsFolder)).filter((name) => name.endsWith('.sql')).sort())
    hash.update(await readFile(path.join(migrationsFolder, file)));
  return path.join(distFolder, 'pglite-template', hash.digest('hex').slice(0, 16));
}

/**
 * Makes the template for the current migrations unless it exists (`made`: false); older templates
 * are removed.
 */
export async function ensureTemplate(
  migrationsFolder: string,
  distFolder: string,
): Promise<{ folder: string; made: boolean }> {
  const folder = await templateFolder(migrationsFolder, distFolder);
  if (existsSync(path.join(folder, 'PG_VERSION'))) return { folder, made: false };
  await rm(path.dirname(folder), { recursive: true, force: true });
  await mkdir(path.dirname(folder), { recursive: true });
  // Made aside and renamed into place: a folder with PG_VERSION is always a whole, closed database.
  const making = `${folder}.making-${process.pid}`;
  const pglite = new PGlite(making);
  await migrate(drizzle(pglite), { migrationsFolder });
  await pglite.close();
  await rename(making, folder);
  return { folder, made: true };
}
