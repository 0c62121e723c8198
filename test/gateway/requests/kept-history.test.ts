import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

type Json = Record<string, unknown>;

/**
 * A turn of about 1 KB, so that a conversation of a few is kept
 * (`shared/http/repeated-members.ts`).
 */
const turn = (i: number, role: 'user' | 'assistant') => ({
  role,
  content: `Turn ${i}: ${'the agent reads the file, edits the function and runs the tests again. '.repeat(14)}`,
});
const conversation = (turns: number) =>
  Array.from({ length: turns }, (_, i) => turn(i, i % 2 === 0 ? 'user' : 'assistant'));

/**
 * Each protocol's body for a conversation of `turns` items: what an agent sends again, longer,
 * every turn.
 */
const PROTOCOLS: Record<string, { path: string; body: (turns: number) => Json }> = {
  chat: {
    path: 'chat/completions',
    body: (turns) => ({ model: 'sim-chat', max_tokens: 8, messages: conversation(turns) }),
  },
  messages: {
    path: 'messages',
    body: (turns) => ({ model: 'sim-chat', max_tokens: 8, messages: conversation(turns) }),
  },
  responses: {
    path: 'responses',
    body: (turns) => ({
      model: 'sim-chat',
      max_output_tokens: 8,
      store: false,
      input: conversation(turns).map((item) => ({ type: 'message', ...item })),
    }),
  },
};

/**
 * An agent's conversation, sent again longer every turn, is parsed as its new items only: the
 * earlier ones are taken as the key kept them. What the engine is sent and what is billed must be
 * what a body parsed whole gives: for Messages and Responses the engine is sent a translation of
 * the parsed body (checked to fail when the kept items are filled in one short); a chat engine is
 * sent the client's own bytes.
 */
describe('a conversation sent again every turn', () => {
  let sim: RunningSimulator;
  let gateway: TestGateway;

  beforeAll(async () => {
    sim = await startSimulator({ models: [{ name: 'sim-chat', task: 'chat' }], ttftMs: 0, itlMs: 0 });
    gateway = await startTestGateway('pglite', {}, { engines: { 'sim-chat': sim.url } });
  });
  afterAll(async () => {
    await gateway?.close();
    await sim?.close();
  });

  /**
   * Sends one body as the SDKs do (`JSON.stringify`); returns the engine's counts for it, and the
   * answer's.
   */
  async function send(secret: string, path: string, body: Json) {
    const before = sim.stats();
    const response = await fetch(`${gateway.baseURL}/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const answer = (await response.json()) as Json;
    const after = sim.stats();
    return {
      status: response.status,
      answer,
      engine: {
        prompt: after.promptTokens - before.promptTokens,
        generated: after.generationTokens - before.generationTokens,
      },
    };
  }

  for (const [protocol, { path, body }] of Object.entries(PROTOCOLS)) {
    it(`${protocol}: each turn is sent to the engine and billed as the same body parsed whole`, async () => {
      const agent = await gateway.tenant();
      const engineCounts: Array<{ prompt: number; generated: number }> = [];
      for (const turns of [5, 7, 9]) {
        const sent = await send(agent.secret, path, body(turns));
        expect(sent.status).toBe(200);
        engineCounts.push(sent.engine);
        // A new key has kept nothing: its body of the same bytes is parsed whole, and the engine
        // counts the same.
        const whole = await send((await gateway.tenant()).secret, path, body(turns));
        expect(whole.status).toBe(200);
        expect(sent.engine).toEqual(whole.engine);
        expect(sent.engine.prompt).toBeGreaterThan(0);
      }
      await gateway.charged();
      const records = await gateway.services.db
        .select()
        .from(usageRecords)
        .where(eq(usageRecords.orgId, agent.orgId))
        .orderBy(usageRecords.createdAt);
      expect(records.map((record) => [record.status, record.promptTokens, record.completionTokens])).toEqual(
        engineCounts.map((counts) => [200, counts.prompt, counts.generated]),
      );
    });
  }
});
