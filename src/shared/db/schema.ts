/**
 * The store's tables, one file per domain (`*-schema.ts`, each of which drizzle-kit reads:
 * `drizzle.config.ts`). This index re-exports the domains most of the code reads, so an import of
 * `schema.js` finds any of them; the batches', files' and blobs' tables are imported from their own
 * files, and `client.ts` gives drizzle's relational queries this index alone.
 */
export * from './accounts-schema.js';
export * from './ledger-schema.js';
export * from './catalog-schema.js';
export * from './usage-schema.js';
export * from './responses-schema.js';
export * from './conversations-schema.js';
export * from './stacks-schema.js';
export * from './clusters-schema.js';
export * from './runs-schema.js';
export * from './costs-schema.js';
export * from './engines-schema.js';
