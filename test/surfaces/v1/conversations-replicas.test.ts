import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { type RunningGateway, startGateway } from '../../../src/server/start.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { allItems, conversationTurns } from '../../helpers/conversation-turns.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';

// One conversation served by two gateway replicas on one PostgreSQL database, each with its own
// engine.

const hasPostgres = await postgresAvailable();
if (!hasPostgres) console.warn('skipping conversations across gateways: they need PostgreSQL');

describe.skipIf(!hasPostgres)('a conversation across gateway replicas on one PostgreSQL', () => {
  let database: { url: string; drop(): Promise<void> };
  let a: TestGateway;
  let b: RunningGateway;
  let clientA: OpenAI;
  let clientB: OpenAI;

  beforeAll(async () => {
    database = await createTestDatabase();
    a = await startTestGateway('pglite', { DATABASE_URL: database.url });
    // The second replica: the same database, its own engine, caches and memory.
    const config = loadConfig({
      PORT: '0',
      TOLLGATE_HOST: '127.0.0.1',
      TOLLGATE_DATA_DIR: 'memory://',
      TOLLGATE_SEED_DEMO: 'false',
      TOLLGATE_ADMIN_TOKEN: 'test-operator-token-0123456789',
      DATABASE_URL: database.url,
    });
    b = await startGateway(config, { log: createLogger('silent') });
    const { secret } = await a.tenant({
      credit: '100.00',
      key: { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 },
    });
    clientA = new OpenAI({ baseURL: a.baseURL, apiKey: secret, maxRetries: 0 });
    clientB = new OpenAI({ baseURL: `${b.url}/v1`, apiKey: secret, maxRetries: 0 });
  }, 60_000);

  afterAll(async () => {
    await b?.close();
    await a?.close();
    await database?.drop();
  });

  it('20 turns alternating between the replicas: each prompt is the conversation written out', async () => {
    const { id } = await clientA.conversations.create({ items: [{ role: 'developer', content: 'Be brief.' }] });
    const counts = await conversationTurns([clientA, clientB], id, 20);
    for (let turn = 1; turn < counts.length; turn++) expect(counts[turn]).toBeGreaterThan(counts[turn - 1]!);
    // An item deleted on one replica is gone from the next turn on the other.
    const items = await allItems(clientB, id);
    await clientB.conversations.items.delete(items[1]!.id as string, { conversation_id: id });
    await conversationTurns([clientA], id, 1);
    expect((await allItems(clientA, id)).map((item) => item.id)).not.toContain(items[1]!.id);
  }, 120_000);

  it('turns at once on both replicas lose no append', async () => {
    const { id } = await clientA.conversations.create();
    const turns = await Promise.all(
      Array.from({ length: 8 }, (_, n) =>
        (n % 2 ? clientA : clientB).responses.create({
          model: 'sim-chat',
          conversation: id,
          input: `parallel ${n}`,
          max_output_tokens: 4,
        }),
      ),
    );
    const items = await allItems(clientA, id);
    const outputs = turns.reduce((sum, turn) => sum + turn.output.length, 0);
    expect(items).toHaveLength(8 + outputs);
    expect(new Set(items.map((item) => item.id)).size).toBe(items.length);
  }, 60_000);
});
