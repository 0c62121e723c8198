import { rm } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyService } from '../../../src/gateway/keys/service.js';
import { OrgService } from '../../../src/platform/orgs/service.js';
import type { Database } from '../../../src/shared/db/client.js';
import { sql } from 'drizzle-orm';
import { chargeRecord } from '../../helpers/charges.js';
import { FROM_RECORDS, FROM_ROLLUPS, rollupLines } from '../../helpers/rollups.js';
import { MIGRATIONS, migrationsBefore } from '../../helpers/migrations.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';

const stores = (await postgresAvailable()) ? ['pglite', 'postgres'] : ['pglite'];

describe.each(stores)('migration 0022 sums the history already there into the rollups (%s)', (kind) => {
  let db: Database;
  let migrate: (folder: string) => Promise<void>;
  let close = async () => {};
  let before: string;

  beforeAll(async () => {
    before = await migrationsBefore('0022_usage_rollups');
    if (kind === 'postgres') {
      const database = await createTestDatabase({ empty: true });
      const client = postgres(database.url, { onnotice: () => {} });
      db = drizzlePostgres(client) as unknown as Database;
      migrate = (folder) => migratePostgres(drizzlePostgres(client), { migrationsFolder: folder });
      close = async () => {
        await client.end();
        await database.drop();
      };
    } else {
      const client = new PGlite();
      db = drizzlePglite(client) as unknown as Database;
      migrate = (folder) => migratePglite(drizzlePglite(client), { migrationsFolder: folder });
      close = () => client.close();
    }
    await migrate(before);
  });
  afterAll(async () => {
    await close();
    await rm(before, { recursive: true, force: true });
  });

  it('equals the usage records to the nano-unit, per day, key, project and model', async () => {
    const org = await new OrgService(db).create('history');
    const keys = new KeyService(db, 'sk-gw-');
    const { key: k1 } = await keys.create({ orgId: org.id, name: 'k1' });
    const { key: k2 } = await keys.create({ orgId: org.id, name: 'k2' });
    const rows = Array.from({ length: 50 }, (_, i) => {
      const {
        cost,
        requestData: _bodies,
        ...record
      } = chargeRecord(`old-${i}`, { orgId: org.id, keyId: i % 2 ? k1.id : k2.id }, 0n, {
        modelId: i % 3 ? 'm-a' : 'm-b',
        promptTokens: 100 + i,
        completionTokens: i,
        cachedTokens: i % 4,
        reasoningTokens: i % 2,
        status: i % 10 === 0 ? 500 : 200,
        cacheHit: i % 7 === 0,
        createdAt: new Date(Date.UTC(2025, 11, 30 + (i % 4), 23, 59, 59, 999)),
      });
      return { ...record, cost: i === 1 ? 9_007_199_254_740_993n : BigInt(i * 12_345) + cost };
    });
    // Written in the columns of 0022's table (later migrations add `batch_id`, which the schema
    // names).
    for (const r of rows)
      await db.execute(sql`insert into usage_records (id, org_id, key_id, project_id, model_id, endpoint,
          prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_nanos, status, streamed,
          usage_source, latency_ms, ttft_ms, cache_hit, created_at)
        values (${r.id}, ${r.orgId}, ${r.keyId}, ${r.projectId ?? null}, ${r.modelId}, ${r.endpoint}, ${r.promptTokens},
          ${r.completionTokens}, ${r.cachedTokens ?? 0}, ${r.reasoningTokens ?? 0}, ${r.cost}, ${r.status}, ${r.streamed},
          ${r.usageSource}, ${r.latencyMs}, ${r.ttftMs ?? null}, ${r.cacheHit ?? false},
          ${r.createdAt!.toISOString()}::timestamptz)`);
    await migrate(MIGRATIONS);
    const rollups = await rollupLines(db, FROM_ROLLUPS);
    expect(rollups.length).toBeGreaterThanOrEqual(8);
    expect(rollups).toEqual(await rollupLines(db, FROM_RECORDS));
  });
});
