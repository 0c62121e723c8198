import path from 'node:path';
import type { Database } from '../db/client.js';
import type { BlobStore } from './blob-store.js';
import { DatabaseBlobStore } from './database-store.js';
import { FolderBlobStore } from './folder-store.js';

/**
 * The blob store of this deployment: on PostgreSQL, PostgreSQL in chunks (every replica reaches
 * it); embedded, `<data folder>/blobs` (a temporary folder for `memory://`), never PGlite's heap,
 * which never shrinks.
 *
 * @example
 * const blobs = openBlobStore(config, store.db);
 */
export function openBlobStore(where: { databaseUrl?: string; dataDir: string }, db: Database): BlobStore {
  if (where.databaseUrl) return new DatabaseBlobStore(db);
  return new FolderBlobStore(where.dataDir === 'memory://' ? null : path.join(where.dataDir, 'blobs'));
}
