import { rm } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseResponseStore } from '../../../src/gateway/stored-responses/database-store.js';
import type { Database } from '../../../src/shared/db/client.js';
import { MIGRATIONS, migrationsBefore } from '../../helpers/migrations.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';

const stores = (await postgresAvailable()) ? ['pglite', 'postgres'] : ['pglite'];
const ID = (n: number) => `resp_${String(n).repeat(48).slice(0, 48)}`;

describe.each(stores)('migration 0018 moves stored responses already there (%s)', (kind) => {
  let db: Database;
  let close = async () => {};
  let before: string;

  beforeAll(async () => {
    before = await migrationsBefore('0018_stored_response_input_items');
    if (kind === 'postgres') {
      const database = await createTestDatabase({ empty: true });
      const client = postgres(database.url, { onnotice: () => {} });
      db = drizzlePostgres(client) as unknown as Database;
      await migratePostgres(drizzlePostgres(client), { migrationsFolder: before });
      close = async () => {
        await client.end();
        await database.drop();
      };
    } else {
      const client = new PGlite();
      db = drizzlePglite(client) as unknown as Database;
      await migratePglite(drizzlePglite(client), { migrationsFolder: before });
      close = () => client.close();
    }
  });
  afterAll(async () => {
    await close();
    await rm(before, { recursive: true, force: true });
  });

  it('gives every item a row under a usable id, keeps each output, and reads them back, a \\u0000 included', async () => {
    await db.execute(sql`insert into organizations (id, name) values ('org_m', 'm')`);
    await db.execute(
      sql`insert into api_keys (id, org_id, name, secret_hash, secret_hint) values ('key_m', 'org_m', 'k', 'h', 'p')`,
    );
    const input = JSON.stringify([
      { id: 'msg_1', type: 'message', role: 'user', content: 'a\u0000b' },
      { id: 'msg_1', type: 'message', role: 'user', content: 'again' },
      { id: 'not an id', type: 'message', role: 'user', content: 'c' },
      { id: 'msg_4', type: 'message', role: 'user', content: 'd' },
    ]);
    const plain = JSON.stringify({ id: ID(1), output: [{ type: 'message', id: 'msg_o' }], status: 'completed' });
    const nul = JSON.stringify({ id: ID(2), output: [{ type: 'message', id: 'msg_n', text: '\u0000' }] });
    const rows: Array<[string, string]> = [
      [ID(1), plain],
      [ID(2), nul],
    ];
    for (const [id, response] of rows)
      await db.execute(sql`insert into stored_responses (id, org_id, key_id, model, input_json, response_json, bytes,
        created_at, expires_at) values (${id}, 'org_m', 'key_m', 'm', ${input}, ${response}, 10, now(),
        now() + interval '1 day')`);
    if (kind === 'postgres') await migratePostgres(db as never, { migrationsFolder: MIGRATIONS });
    else await migratePglite(db as never, { migrationsFolder: MIGRATIONS });
    const store = new DatabaseResponseStore(db, {
      retentionDays: 30,
      maxBytes: 1 << 20,
      orgMaxBytes: 1 << 30,
      chainMaxTurns: 10,
      chainMaxBytes: 1 << 20,
      waitMs: 0,
    });
    for (const [id, response] of rows) {
      expect(await store.get('org_m', id)).toEqual(JSON.parse(response));
      const [turn] = (await store.chain('org_m', id))!;
      expect(turn!.input).toEqual(JSON.parse(input));
      expect(turn!.response.output).toEqual((JSON.parse(response) as { output: unknown }).output);
      const page = await store.inputItems('org_m', id, { limit: 2, order: 'asc', after: 'msg_1' });
      // The second msg_1 and the item whose id was none were given new ids; msg_4 kept its own.
      expect(page!.data.map((item) => item.content)).toEqual(['c', 'd']);
      expect(page!.lastId).toBe('msg_4');
    }
  });
});
