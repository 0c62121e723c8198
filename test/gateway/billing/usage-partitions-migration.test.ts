import { rm } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usagePartitions } from '../../../src/gateway/billing/usage-partitions.js';
import { UsageReports } from '../../../src/gateway/billing/usage-reports.js';
import type { UsageCursor } from '../../../src/gateway/billing/usage-requests.js';
import { WalletService } from '../../../src/gateway/billing/wallet.js';
import { KeyService } from '../../../src/gateway/keys/service.js';
import { OrgService } from '../../../src/platform/orgs/service.js';
import type { Database } from '../../../src/shared/db/client.js';
import { requestData } from '../../../src/shared/db/schema.js';
import { chargeRecord } from '../../helpers/charges.js';
import { MIGRATIONS, migrationsBefore } from '../../helpers/migrations.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';
import { rowsOf } from '../../../src/shared/db/rows.js';

const stores = (await postgresAvailable()) ? ['pglite', 'postgres'] : ['pglite'];

describe.each(stores)('migration 0025 moves the usage records already there into months (%s)', (kind) => {
  let db: Database;
  let migrate: (folder: string) => Promise<void>;
  let close = async () => {};
  let before: string;

  beforeAll(async () => {
    before = await migrationsBefore('0025_usage_partitions');
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

  it('keeps every row, readable page by page by (created_at, id), and charges on after it', async () => {
    const org = await new OrgService(db).create('history');
    const { key } = await new KeyService(db, 'sk-gw-').create({ orgId: org.id, name: 'k' });
    const owner = { orgId: org.id, keyId: key.id };
    // Three months of records, two of them at the same instant (the cursor breaks the tie by id).
    const rows = Array.from({ length: 25 }, (_, i) => {
      const { requestData: _bodies, ...record } = chargeRecord(`old-${String(i).padStart(2, '0')}`, owner, 0n, {
        createdAt: new Date(Date.UTC(2025, 10 + (i % 3), 1 + i, 23, 59, i === 7 ? 58 : 59, 999)),
      });
      return record;
    });
    // Written in the columns of 0025's table (later migrations add `batch_id`, which the schema
    // names).
    for (const r of rows)
      await db.execute(sql`insert into usage_records (id, org_id, key_id, project_id, model_id, endpoint,
          prompt_tokens, completion_tokens, cost_nanos, status, streamed, usage_source, latency_ms, ttft_ms, created_at)
        values (${r.id}, ${r.orgId}, ${r.keyId}, ${r.projectId ?? null}, ${r.modelId}, ${r.endpoint}, ${r.promptTokens},
          ${r.completionTokens}, ${r.cost}, ${r.status}, ${r.streamed}, ${r.usageSource}, ${r.latencyMs},
          ${r.ttftMs ?? null}, ${r.createdAt!.toISOString()}::timestamptz)`);
    await db.insert(requestData).values({ requestId: 'old-00', requestBody: '{}', responseBody: '{}' });
    await migrate(MIGRATIONS);

    const months = (await usagePartitions(db)).map((p) => p.name);
    expect(months.slice(0, 3)).toEqual(['usage_records_y2025m11', 'usage_records_y2025m12', 'usage_records_y2026m01']);
    const inDefault = await db.execute(
      sql`select count(*)::int as n from usage_records where tableoid = 'usage_records_default'::regclass`,
    );
    expect(Number(rowsOf<{ n: number }>(inDefault)[0]!.n)).toBe(0);

    const reports = new UsageReports(db);
    const scope = { orgId: org.id, from: new Date('2025-01-01T00:00:00Z'), to: new Date('2027-01-01T00:00:00Z') };
    const seen: string[] = [];
    let after: UsageCursor | undefined;
    for (;;) {
      const page = await reports.requests({ ...scope, limit: 4, after });
      seen.push(...page.records.map((r) => r.id));
      if (!page.next) break;
      after = page.next;
    }
    const newestFirst = [...rows]
      .sort((a, b) => b.createdAt!.getTime() - a.createdAt!.getTime() || (a.id < b.id ? 1 : -1))
      .map((r) => r.id);
    expect(seen).toEqual(newestFirst);

    expect(await db.select().from(requestData)).toHaveLength(1);
    const wallets = new WalletService(db);
    await wallets.credit(org.id, 'topup', 1000n);
    expect(await wallets.chargeMany([chargeRecord('new-1', owner, 10n), chargeRecord('old-03', owner, 10n)])).toEqual([
      true,
      false,
    ]);
  });
});
