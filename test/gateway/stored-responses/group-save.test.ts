import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GroupSave, type SaveRow } from '../../../src/gateway/stored-responses/group-save.js';
import { KeyService } from '../../../src/gateway/keys/service.js';
import { OrgService } from '../../../src/platform/orgs/service.js';
import type { Database } from '../../../src/shared/db/client.js';
import { openStore, type Store } from '../../../src/shared/db/client.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';

const stores = (await postgresAvailable()) ? ['pglite', 'postgres'] : ['pglite'];
const ONE_GIB = 1024 * 1024 * 1024;

/**
 * The database, counting the statements sent through `execute` (each save's group is one), and how
 * many began as the one before ended: those took the saves that came while it ran, with no wait of
 * their own.
 */
/**
 * `db` counting its statements, those that began as the one before ended (`backToBack`) and the
 * milliseconds spent in them (`statementMs`: what a loaded machine slows most, told apart from
 * waiting).
 */
function counting(db: Database): {
  db: Database;
  statements: () => number;
  backToBack: () => number;
  statementMs: () => number;
} {
  let statements = 0;
  let backToBack = 0;
  let statementMs = 0;
  let lastEndedAt = Number.NEGATIVE_INFINITY;
  const counted = new Proxy(db, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (name !== 'execute' || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        statements += 1;
        const startedAt = performance.now();
        if (startedAt - lastEndedAt < 2) backToBack += 1;
        try {
          // Awaited once here: drizzle runs a query each time its result is awaited.
          return await ((value as (...a: unknown[]) => unknown).apply(target, args) as Promise<unknown>);
        } finally {
          lastEndedAt = performance.now();
          statementMs += lastEndedAt - startedAt;
        }
      };
    },
  });
  return {
    db: counted,
    statements: () => statements,
    backToBack: () => backToBack,
    statementMs: () => statementMs,
  };
}

describe.each(stores)('stored responses written in groups (%s)', (kind) => {
  let store: Store;
  let cleanup = async () => {};
  let orgs: OrgService;
  let keys: KeyService;
  let count = 0;

  beforeAll(async () => {
    if (kind === 'postgres') {
      const database = await createTestDatabase();
      cleanup = database.drop;
      store = await openStore({ databaseUrl: database.url, dataDir: 'memory://' });
    } else {
      store = await openStore({ dataDir: 'memory://' });
    }
    orgs = new OrgService(store.db);
    keys = new KeyService(store.db, 'sk-gw-');
  });
  afterAll(async () => {
    await store?.close();
    await cleanup();
  });

  async function tenant() {
    const org = await orgs.create('t');
    const { key } = await keys.create({ orgId: org.id, name: 'k' });
    return { orgId: org.id, keyId: key.id };
  }

  function row(who: { orgId: string; keyId: string }, text = 'hello'): SaveRow {
    count += 1;
    const item = JSON.stringify({ id: `msg_${count}`, type: 'message', role: 'user', content: text });
    const response = JSON.stringify({ id: `resp_group${String(count).padStart(6, '0')}`, output: null });
    return {
      id: `resp_group${count}_${Math.random().toString(36).slice(2, 8)}`,
      ...who,
      model: 'sim-chat',
      previousResponseId: null,
      items: [{ position: 0, itemId: `msg_${count}`, json: item }],
      response,
      output: '[]',
      bytes: item.length + response.length + 2,
      createdAt: new Date(),
      expiresAt: new Date(Date.now() + 86_400_000),
    };
  }

  async function storedIds(ids: string[]): Promise<string[]> {
    const result = await store.db.execute(
      sql`select id from stored_responses where id in (${sql.join(
        ids.map((id) => sql`${id}`),
        sql`, `,
      )}) order by id`,
    );
    const rows = Array.isArray(result) ? result : (result as { rows: unknown[] }).rows;
    return (rows as Array<{ id: string }>).map((each) => each.id);
  }

  it('writes saves that arrive together in one statement, each resolving once its row is in', async () => {
    const a = await tenant();
    const b = await tenant();
    const { db, statements } = counting(store.db);
    const group = new GroupSave(db, { orgMaxBytes: ONE_GIB, waitMs: 50 });
    const rows = Array.from({ length: 20 }, (_, i) => row(i % 2 ? a : b));
    const outcomes = await Promise.all(rows.map((each) => group.save(each)));
    expect(outcomes).toEqual(rows.map(() => 'stored'));
    expect(await storedIds(rows.map((each) => each.id))).toEqual(rows.map((each) => each.id).sort());
    // The first goes alone (nothing says others are coming); the 19 that came while it was written
    // share the next.
    expect(statements()).toBe(2);
  });

  it('writes a save at once on a quiet gateway: it waits for others only while saves come closer than the wait', async () => {
    const a = await tenant();
    const { db, statementMs } = counting(store.db);
    const group = new GroupSave(db, { orgMaxBytes: ONE_GIB, waitMs: 2_000 });
    await group.save(row(a));
    // Saves a wait's length apart: no save is likely to share one, so none waits.
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    const [startedAt, statementsBefore] = [performance.now(), statementMs()];
    await group.save(row(a));
    // The time not spent in its statement is less than the wait: it did not wait (a loaded machine
    // slows the statement, which is not counted).
    const outside = performance.now() - startedAt - (statementMs() - statementsBefore);
    expect(outside).toBeLessThan(2_000);
  });

  it('bounds a statement’s bytes: large responses that arrive together go out in more than one', async () => {
    const a = await tenant();
    const { db, statements } = counting(store.db);
    const group = new GroupSave(db, { orgMaxBytes: ONE_GIB, waitMs: 50 });
    // Counted as 9 MiB each (the column the bound reads), so no two share a statement of at most 16
    // MiB.
    const rows = Array.from({ length: 4 }, () => ({ ...row(a), bytes: 9 * 1024 * 1024 }));
    expect(await Promise.all(rows.map((each) => group.save(each)))).toEqual(rows.map(() => 'stored'));
    expect(statements()).toBe(4);
  });

  it('gathers saves that come close together for at most the wait', async () => {
    const a = await tenant();
    const { db, statements, backToBack, statementMs } = counting(store.db);
    const group = new GroupSave(db, { orgMaxBytes: ONE_GIB, waitMs: 100 });
    const saves: Array<Promise<unknown>> = [];
    const firstAt = performance.now();
    for (let i = 0; i < 8; i++) {
      saves.push(group.save(row(a)));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // The 5 ms gaps stretch on a loaded machine: the bound is from the span the saves really took.
    const spanMs = performance.now() - firstAt;
    const [startedAt, statementsBefore] = [performance.now(), statementMs()];
    await Promise.all(saves);
    // Held for at most about the wait: the time not spent in statements (which a loaded machine
    // slows) is within ten waits.
    const outside = performance.now() - startedAt - (statementMs() - statementsBefore);
    expect(outside).toBeLessThan(1_000);
    // Eight saves 5 ms apart with a 100 ms wait: one statement per wait they span (and one more),
    // never one each. A statement that took longer than the gaps (a loaded machine's commit) is
    // followed at once by one with the saves that came meanwhile: those are gathered by the
    // statement, not the wait, and are not counted against it.
    expect(statements() - backToBack()).toBeLessThanOrEqual(Math.min(7, Math.ceil(spanMs / 100) + 1));
  });

  it('never lets one tenant’s refused row cost another tenant’s save in the same group', async () => {
    const victim = await tenant();
    const hostile = await tenant();
    const group = new GroupSave(store.db, { orgMaxBytes: ONE_GIB, waitMs: 50 });
    await group.save(row(victim));
    // A row the database refuses (a key that is not there) in the middle of others' rows.
    const rows = [row(victim), { ...row(hostile), keyId: 'key_missing' }, row(victim)];
    const outcomes = await Promise.allSettled(rows.map((each) => group.save(each)));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await storedIds(rows.map((each) => each.id))).toEqual([rows[0]!.id, rows[2]!.id].sort());
  });

  it('keeps each organization’s bound when their rows share a group: only the organization past it is refused', async () => {
    const small = await tenant();
    const other = await tenant();
    const probe = row(small);
    // Room for two of `small`'s rows (all of one size), and plenty for `other`.
    const group = new GroupSave(store.db, { orgMaxBytes: 2 * probe.bytes + 5, waitMs: 50 });
    await group.save(probe);
    const rows = [row(small), row(other), row(small), row(other)];
    const outcomes = await Promise.all(rows.map((each) => group.save(each)));
    expect(outcomes).toEqual(['stored', 'stored', 'over the organization bound', 'stored']);
  });
});
