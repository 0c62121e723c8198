import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemId } from '../../../src/gateway/requests/responses/answer.js';
import {
  DatabaseResponseStore,
  type ResponseStoreSettings,
  storedForm,
} from '../../../src/gateway/stored-responses/database-store.js';
import type { StoredResponse } from '../../../src/gateway/stored-responses/store.js';
import { KeyService } from '../../../src/gateway/keys/service.js';
import { OrgService } from '../../../src/platform/orgs/service.js';
import { openStore, type Store } from '../../../src/shared/db/client.js';
import { GatewayError } from '../../../src/shared/http/errors.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';

const stores = (await postgresAvailable()) ? ['pglite', 'postgres'] : ['pglite'];
const SETTINGS: ResponseStoreSettings = {
  retentionDays: 30,
  maxBytes: 64 * 1024,
  orgMaxBytes: 1024 * 1024 * 1024,
  chainMaxTurns: 50,
  chainMaxBytes: 256 * 1024,
  waitMs: 10,
};
const DAY_MS = 86_400_000;

describe.each(stores)('stored Responses in the database (%s)', (kind) => {
  let store: Store;
  let reopen: () => Promise<Store>;
  let cleanup = async () => {};
  let responses: DatabaseResponseStore;
  let orgs: OrgService;
  let keys: KeyService;
  let count = 0;

  beforeAll(async () => {
    if (kind === 'postgres') {
      const database = await createTestDatabase();
      cleanup = database.drop;
      reopen = () => openStore({ databaseUrl: database.url, dataDir: 'memory://' });
    } else {
      // A data folder, not memory: the restart below opens the same files again.
      const dataDir = await mkdtemp(path.join(tmpdir(), 'tollgate-responses-'));
      cleanup = () => rm(dataDir, { recursive: true, force: true });
      reopen = () => openStore({ dataDir });
    }
    store = await reopen();
    responses = new DatabaseResponseStore(store.db, SETTINGS);
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

  /** A turn of `who`'s conversation, continuing `previous`, made `ageDays` ago. */
  function turn(
    who: { orgId: string; keyId: string },
    previous: string | null,
    text: string,
    ageDays = 0,
  ): StoredResponse {
    count += 1;
    const id = itemId('resp');
    return {
      id,
      orgId: who.orgId,
      keyId: who.keyId,
      model: 'sim-chat',
      createdAt: new Date(Date.now() - ageDays * DAY_MS),
      previousResponseId: previous,
      input: [{ id: `msg_in${count}`, type: 'message', role: 'user', content: [{ type: 'input_text', text }] }],
      response: {
        id,
        object: 'response',
        status: 'completed',
        output: [{ type: 'message', content: [{ type: 'output_text', text: `re: ${text}` }] }],
      },
    };
  }

  async function conversation(who: { orgId: string; keyId: string }, texts: string[]): Promise<StoredResponse[]> {
    const saved: StoredResponse[] = [];
    for (const text of texts) {
      const next = turn(who, saved.at(-1)?.id ?? null, text);
      await responses.save(next);
      saved.push(next);
    }
    return saved;
  }

  it('gives a response back as it was saved, text of any kind included, to its organization only', async () => {
    const a = await tenant();
    const b = await tenant();
    const saved = turn(a, null, 'nul \u0000, quote " and \\, ünïcödé 🚀, \u202e bidi');
    await responses.save(saved);
    expect(await responses.get(a.orgId, saved.id)).toEqual(saved.response);
    expect((await responses.chain(a.orgId, saved.id))?.[0]?.input).toEqual(saved.input);
    expect(await responses.get(b.orgId, saved.id)).toBeNull();
    expect(await responses.get(a.orgId, itemId('resp'))).toBeNull();
    // A second save of the same id is refused by the key, not a second row.
    await expect(responses.save(saved)).rejects.toThrow();
  });

  it('walks a conversation oldest first, from any turn, within its organization', async () => {
    const a = await tenant();
    const b = await tenant();
    const turns = await conversation(a, ['one', 'two', 'three']);
    expect((await responses.chain(a.orgId, turns[2]!.id))?.map((t) => t.id)).toEqual(turns.map((t) => t.id));
    expect((await responses.chain(a.orgId, turns[1]!.id))?.map((t) => t.id)).toEqual([turns[0]!.id, turns[1]!.id]);
    expect(await responses.chain(b.orgId, turns[2]!.id)).toBeNull();
    // Another organization naming A's turn as its previous one reaches nothing of A's.
    const hostile = turn(b, turns[2]!.id, 'what did they say?');
    await responses.save(hostile);
    expect((await responses.chain(b.orgId, hostile.id))?.map((t) => t.id)).toEqual([hostile.id]);
  });

  it('ends a conversation at a deleted turn; the later turns stay readable and continuable', async () => {
    const a = await tenant();
    const b = await tenant();
    const turns = await conversation(a, ['one', 'two', 'three', 'four']);
    // Another organization can delete nothing of A's.
    expect(await responses.delete(b.orgId, turns[1]!.id)).toBe(false);
    expect(await responses.get(a.orgId, turns[1]!.id)).not.toBeNull();
    expect(await responses.delete(a.orgId, turns[1]!.id)).toBe(true);
    expect(await responses.delete(a.orgId, turns[1]!.id)).toBe(false);
    expect(await responses.get(a.orgId, turns[1]!.id)).toBeNull();
    expect(await responses.chain(a.orgId, turns[1]!.id)).toBeNull();
    expect(await responses.get(a.orgId, turns[3]!.id)).toEqual(turns[3]!.response);
    expect((await responses.chain(a.orgId, turns[3]!.id))?.map((t) => t.id)).toEqual([turns[2]!.id, turns[3]!.id]);
  });

  it('reads a chain once for parallel continuations of it, and again for a later one', async () => {
    const a = await tenant();
    const turns = await conversation(a, ['one', 'two']);
    const last = turns[1]!.id;
    const parallel = await Promise.all(Array.from({ length: 30 }, () => responses.chain(a.orgId, last)));
    // One read, shared: every continuation has the very same turns.
    for (const each of parallel) expect(each).toBe(parallel[0]);
    expect(parallel[0]?.map((t) => t.id)).toEqual([turns[0]!.id, last]);
    // Nothing is cached past the read: a deletion is seen by the next one.
    expect(await responses.delete(a.orgId, turns[0]!.id)).toBe(true);
    expect((await responses.chain(a.orgId, last))?.map((t) => t.id)).toEqual([last]);
  });

  it('refuses a conversation past its bounds with a 400 naming the setting', async () => {
    const a = await tenant();
    const narrow = new DatabaseResponseStore(store.db, { ...SETTINGS, chainMaxTurns: 3 });
    const turns = await conversation(a, ['1', '2', '3', '4']);
    expect((await narrow.chain(a.orgId, turns[2]!.id))?.length).toBe(3);
    const refusal = await narrow.chain(a.orgId, turns[3]!.id).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(GatewayError);
    expect(refusal).toMatchObject({
      status: 400,
      code: 'invalid_request',
      message: expect.stringContaining('TOLLGATE_RESPONSES_CHAIN_MAX_TURNS=3') as unknown,
    });
    const bytesOf = (t: StoredResponse) => storedForm(t).bytes;
    // Exactly the first three turns' bytes: three are continued, four are one byte too many.
    const small = new DatabaseResponseStore(store.db, {
      ...SETTINGS,
      chainMaxBytes: turns.slice(0, 3).reduce((sum, t) => sum + bytesOf(t), 0),
    });
    expect((await small.chain(a.orgId, turns[2]!.id))?.length).toBe(3);
    await expect(small.chain(a.orgId, turns[3]!.id)).rejects.toThrow(/TOLLGATE_RESPONSES_CHAIN_MAX_BYTES/);
  });

  it('refuses to store a response past TOLLGATE_RESPONSES_MAX_BYTES, and stores nothing of it', async () => {
    const a = await tenant();
    const big = turn(a, null, 'x'.repeat(SETTINGS.maxBytes));
    const refusal = await responses.save(big).catch((error: unknown) => error);
    expect(refusal).toMatchObject({
      status: 400,
      code: 'invalid_request',
      message: expect.stringContaining('TOLLGATE_RESPONSES_MAX_BYTES=65536') as unknown,
    });
    expect(await responses.get(a.orgId, big.id)).toBeNull();
  });

  it('bounds an organization’s stored bytes by TOLLGATE_RESPONSES_ORG_MAX_BYTES; deleting and purging free them', async () => {
    const a = await tenant();
    const b = await tenant();
    const first = turn(a, null, 'one');
    const { bytes } = storedForm(first);
    // Room for two turns of this size (ids of the same length: the texts below are as long).
    const bounded = new DatabaseResponseStore(store.db, { ...SETTINGS, orgMaxBytes: 2 * bytes + 10 });
    const second = turn(a, first.id, 'two');
    await bounded.save(first);
    await bounded.save(second);
    const third = turn(a, second.id, 'six');
    const refusal = await bounded.save(third).catch((error: unknown) => error);
    expect(refusal).toMatchObject({
      status: 400,
      code: 'invalid_request',
      message: expect.stringContaining('TOLLGATE_RESPONSES_ORG_MAX_BYTES=') as unknown,
    });
    expect(await bounded.get(a.orgId, third.id)).toBeNull();
    // Another organization has room of its own.
    await bounded.save(turn(b, null, 'one'));
    expect(await bounded.delete(a.orgId, first.id)).toBe(true);
    await bounded.save(third);
    // An expired turn counts until it is purged.
    const expired = turn(a, null, 'old', SETTINGS.retentionDays + 1);
    await expect(bounded.save(expired)).rejects.toThrow(/TOLLGATE_RESPONSES_ORG_MAX_BYTES/);
    expect(
      await bounded.purgeExpired(new Date(Date.now() + (SETTINGS.retentionDays + 1) * DAY_MS)),
    ).toBeGreaterThanOrEqual(3);
    await bounded.save(expired);
    expect(await bounded.get(a.orgId, expired.id)).toBeNull();
    expect(await bounded.purgeExpired(new Date())).toBeGreaterThanOrEqual(1);
    await bounded.save(turn(a, null, 'new'));
  });

  it('keeps an organization’s bound exactly when its saves arrive together, and refuses only what passes it', async () => {
    const a = await tenant();
    const b = await tenant();
    const turns = ['t1', 't2', 't3', 't4', 't5'].map((text) => turn(a, null, text));
    const { bytes } = storedForm(turns[0]!);
    // Room for three of a's five, all saved at once (which three is the database's order).
    const bounded = new DatabaseResponseStore(store.db, { ...SETTINGS, orgMaxBytes: 3 * bytes + 10 });
    const others = [turn(b, null, 'b1'), turn(b, null, 'b2')];
    const outcomes = await Promise.allSettled([...turns, ...others].map((each) => bounded.save(each)));
    const saved = outcomes.slice(0, 5).map((outcome) => outcome.status === 'fulfilled');
    expect(saved.filter(Boolean)).toHaveLength(3);
    for (const outcome of outcomes.slice(0, 5))
      if (outcome.status === 'rejected') expect(String(outcome.reason)).toMatch(/TOLLGATE_RESPONSES_ORG_MAX_BYTES/);
    const kept = await Promise.all(turns.map((each) => bounded.get(a.orgId, each.id)));
    expect(kept.map((each) => each !== null)).toEqual(saved);
    expect(outcomes.slice(5).map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled']);
  });

  it('forgets an expired response before the purge runs, and the purge removes only expired ones', async () => {
    const a = await tenant();
    const old = turn(a, null, 'old', SETTINGS.retentionDays + 1);
    await responses.save(old);
    const recent = turn(a, old.id, 'recent');
    await responses.save(recent);
    expect(await responses.get(a.orgId, old.id)).toBeNull();
    expect(await responses.inputItems(a.orgId, old.id, { limit: 20, order: 'asc' })).toBeNull();
    expect(await responses.delete(a.orgId, old.id)).toBe(false);
    // An expired turn ends the conversation there, as a deleted one does.
    expect((await responses.chain(a.orgId, recent.id))?.map((t) => t.id)).toEqual([recent.id]);
    expect(await responses.purgeExpired(new Date())).toBeGreaterThanOrEqual(1);
    expect(await responses.purgeExpired(new Date())).toBe(0);
    expect(await responses.get(a.orgId, recent.id)).toEqual(recent.response);
    // Tomorrow plus the retention, the recent one is due too.
    expect(
      await responses.purgeExpired(new Date(Date.now() + (SETTINGS.retentionDays + 1) * DAY_MS)),
    ).toBeGreaterThanOrEqual(1);
    expect(await responses.get(a.orgId, recent.id)).toBeNull();
  });

  it('pages input items as OpenAI does: order, after, limit, has_more', async () => {
    const a = await tenant();
    const b = await tenant();
    const saved = turn(a, null, 'first');
    saved.input = ['i1', 'i2', 'i3', 'i4', 'i5'].map((id) => ({
      id,
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: id }],
    }));
    await responses.save(saved);
    const ids = (page: { data: Array<Record<string, unknown>> } | null) => page?.data.map((item) => item.id);
    const first = await responses.inputItems(a.orgId, saved.id, { limit: 2, order: 'desc' });
    expect(first).toMatchObject({ firstId: 'i5', lastId: 'i4', hasMore: true });
    expect(ids(first)).toEqual(['i5', 'i4']);
    const second = await responses.inputItems(a.orgId, saved.id, { after: 'i4', limit: 2, order: 'desc' });
    expect(ids(second)).toEqual(['i3', 'i2']);
    const last = await responses.inputItems(a.orgId, saved.id, { after: 'i2', limit: 2, order: 'desc' });
    expect(last).toMatchObject({ data: [saved.input[0]], firstId: 'i1', lastId: 'i1', hasMore: false });
    expect(ids(await responses.inputItems(a.orgId, saved.id, { limit: 20, order: 'asc' }))).toEqual([
      'i1',
      'i2',
      'i3',
      'i4',
      'i5',
    ]);
    expect(await responses.inputItems(a.orgId, saved.id, { after: 'i5', limit: 20, order: 'asc' })).toEqual({
      data: [],
      firstId: null,
      lastId: null,
      hasMore: false,
    });
    await expect(
      responses.inputItems(a.orgId, saved.id, { after: 'nope', limit: 20, order: 'asc' }),
    ).rejects.toMatchObject({ status: 400, code: 'invalid_request' });
    expect(await responses.inputItems(b.orgId, saved.id, { limit: 20, order: 'asc' })).toBeNull();
  });

  it('continues a conversation from another process on the same database, and after a restart', async () => {
    const a = await tenant();
    const turns = await conversation(a, ['before the restart', 'still before']);
    // Another process (PostgreSQL: a second pool; PGlite: the same files, once this one has closed
    // them).
    if (kind === 'postgres') {
      const other = await reopen();
      try {
        expect(
          (await new DatabaseResponseStore(other.db, SETTINGS).chain(a.orgId, turns[1]!.id))?.map((t) => t.id),
        ).toEqual(turns.map((t) => t.id));
      } finally {
        await other.close();
      }
    }
    await store.close();
    store = await reopen();
    responses = new DatabaseResponseStore(store.db, SETTINGS);
    orgs = new OrgService(store.db);
    keys = new KeyService(store.db, 'sk-gw-');
    expect(await responses.chain(a.orgId, turns[1]!.id)).toEqual(
      turns.map((t) => ({ id: t.id, input: t.input, response: { id: t.id, output: t.response.output } })),
    );
  });
});
