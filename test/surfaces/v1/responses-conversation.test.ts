import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { type RunningGateway, startGateway } from '../../../src/server/start.js';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';

// A conversation continued by previous_response_id on another gateway replica: two gateways on one
// PostgreSQL database, each with its own engine (the scripted simulator: a request's turn is the
// number of assistant messages it carries, so the answer says how many earlier turns the engine was
// sent).

const hasPostgres = await postgresAvailable();
if (!hasPostgres) console.warn('skipping stored conversations across gateways: they need PostgreSQL');

const TURNS = [
  { content: 'answer zero' },
  { content: 'answer one' },
  { content: 'answer two' },
  { content: 'answer three' },
];

describe.skipIf(!hasPostgres)('previous_response_id across gateway replicas on one PostgreSQL', () => {
  let tmp: string;
  let database: { url: string; drop(): Promise<void> };
  let a: TestGateway;
  let b: RunningGateway;
  let clientA: OpenAI;
  let clientB: OpenAI;

  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-responses-'));
    await writeFile(path.join(tmp, 'turns.json'), JSON.stringify(TURNS));
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({
        engines: [{ kind: 'simulator', model: 'agent-turns', task: 'chat', max_model_len: 8192, script: 'turns.json' }],
      }),
    );
    database = await createTestDatabase();
    const env = { DATABASE_URL: database.url, TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json') };
    a = await startTestGateway('pglite', env);
    await a.services.catalog.add({
      id: 'agent-turns',
      displayName: 'Agent turns',
      hfRepoId: 'tollgate-test/agent-turns',
      taskType: 'chat',
      contextLength: 8192,
      enabled: true,
    });
    await a.services.catalog.setPrice('agent-turns', 150n, 600n);
    // The second replica: the same database, its own engine, caches and memory.
    const config = loadConfig({
      PORT: '0',
      TOLLGATE_HOST: '127.0.0.1',
      TOLLGATE_DATA_DIR: 'memory://',
      TOLLGATE_SEED_DEMO: 'false',
      TOLLGATE_ADMIN_TOKEN: 'test-operator-token-0123456789',
      ...env,
    });
    b = await startGateway(config, { log: createLogger('silent') });
    const { secret } = await a.tenant();
    clientA = new OpenAI({ baseURL: a.baseURL, apiKey: secret, maxRetries: 0 });
    clientB = new OpenAI({ baseURL: `${b.url}/v1`, apiKey: secret, maxRetries: 0 });
  }, 60_000);

  afterAll(async () => {
    await b?.close();
    await a?.close();
    await database?.drop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('continues on the other gateway: its engine is sent the earlier turns, JSON and streamed', async () => {
    const first = await clientA.responses.create({ model: 'agent-turns', instructions: 'Be brief.', input: 'Hello.' });
    expect(first).toMatchObject({ output_text: 'answer zero', store: true });
    const second = await clientB.responses.create({
      model: 'agent-turns',
      previous_response_id: first.id,
      input: 'And then?',
    });
    expect(second).toMatchObject({ output_text: 'answer one', previous_response_id: first.id });
    const third = await clientA.responses
      .stream({
        model: 'agent-turns',
        previous_response_id: second.id,
        input: [{ role: 'user', content: 'Last one.' }],
      })
      .finalResponse();
    expect(third.output_text).toBe('answer two');
    // The streamed one was kept too: the other gateway reads it back and continues it.
    expect(await clientB.responses.retrieve(third.id)).toMatchObject({
      id: third.id,
      output_text: 'answer two',
      status: 'completed',
    });
    const items = await clientB.responses.inputItems.list(third.id);
    expect(items.data).toMatchObject([
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Last one.' }] },
    ]);
    const fourth = await clientB.responses.create({
      model: 'agent-turns',
      previous_response_id: third.id,
      input: 'Go on.',
    });
    expect(fourth.output_text).toBe('answer three');
  });

  it('keeps nothing with store: false, and another organization cannot continue a response: 404 before any hold', async () => {
    const unstored = await clientA.responses.create({ model: 'agent-turns', input: 'Forget this.', store: false });
    expect(unstored).toMatchObject({ store: false });
    await expect(clientB.responses.retrieve(unstored.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const missing = await clientB.responses
      .create({ model: 'agent-turns', previous_response_id: unstored.id, input: 'x' })
      .catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing).toMatchObject({ code: 'previous_response_not_found' });

    const kept = await clientA.responses.create({ model: 'agent-turns', input: 'Mine.' });
    const hostile = await a.tenant();
    const other = new OpenAI({ baseURL: `${b.url}/v1`, apiKey: hostile.secret, maxRetries: 0 });
    const stolen = await other.responses
      .create({ model: 'agent-turns', previous_response_id: kept.id, input: 'What did they say?' })
      .catch((error: unknown) => error);
    expect(stolen).toBeInstanceOf(OpenAI.NotFoundError);
    expect((stolen as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({
      code: 'previous_response_not_found',
    });
    expect(JSON.stringify((stolen as InstanceType<typeof OpenAI.APIError>).error)).not.toContain('Mine.');
    // Refused before the hold: nothing billed, the wallet untouched.
    await a.charged();
    const records = await a.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, hostile.orgId));
    expect(records).toEqual([]);
    expect(await a.services.wallets.balance(hostile.orgId)).toBe(5_000_000_000n);
  });
});
