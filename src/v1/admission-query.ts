import { eq, or, sql } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { apiKeys, models, prices, wallets } from '../db/schema.js';

/**
 * The one read a billed request makes before going upstream: the key by its
 * hash, the organization's balance, and the models matching the requested name
 * with their prices. Three checks (key, model, funds) for one round trip; each
 * check's rules stay in its own module (`keys/`, `catalog/`, `v1/billed-call.ts`).
 * Prepared once per store.
 *
 * @example
 * const rows = await admissionQuery(db).execute({ hash, model: 'sim-chat' });
 */
function prepare(db: Database) {
  const model = sql.placeholder('model');
  return db
    .select({ key: apiKeys, balance: wallets.balance, model: models, price: prices })
    .from(apiKeys)
    .innerJoin(wallets, eq(wallets.orgId, apiKeys.orgId))
    .leftJoin(models, or(eq(models.id, model), eq(models.displayName, model), eq(models.hfRepoId, model)))
    .leftJoin(prices, eq(prices.modelId, models.id))
    .where(eq(apiKeys.secretHash, sql.placeholder('hash')))
    .prepare('tollgate_admission');
}

export type AdmissionQuery = ReturnType<typeof prepare>;

const prepared = new WeakMap<Database, AdmissionQuery>();

export function admissionQuery(db: Database): AdmissionQuery {
  let query = prepared.get(db);
  if (!query) {
    query = prepare(db);
    prepared.set(db, query);
  }
  return query;
}
