import { Agent, run, setTracingDisabled, tool } from '@openai/agents';
import { type OpenAIClient, OpenAIConversationsSession, OpenAIResponsesModel } from '@openai/agents-openai';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

/**
 * Issue 71, item 5, with the real client: the OpenAI Agents SDK's Responses model and its
 * conversation session (`OpenAIConversationsSession`, on `/v1/conversations`) over two turns, the
 * first with a tool call, through the gateway only (its client's base URL; tracing off, so nothing
 * leaves 127.0.0.1). Every model call is billed the engine's counts.
 */
describe("the Agents SDK's Responses model with a conversation session", () => {
  let gateway: TestGateway;
  let tenant: { secret: string; orgId: string };

  beforeAll(async () => {
    setTracingDisabled(true);
    gateway = await startTestGateway('pglite');
    tenant = await gateway.tenant();
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('runs two turns and a tool call, each model call billed exactly', async () => {
    // The SDK bundles its own copy of `openai`: the same client, typed as that copy's.
    const client = new OpenAI({
      baseURL: gateway.baseURL,
      apiKey: tenant.secret,
      maxRetries: 0,
    }) as unknown as OpenAIClient;
    const weather = tool({
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => `Sunny in ${city}, 21 C`,
    });
    const agent = new Agent({
      name: 'Forecaster',
      instructions: 'Answer briefly.',
      model: new OpenAIResponsesModel(client, 'sim-chat'),
      modelSettings: { toolChoice: 'get_weather', maxTokens: 16 },
      tools: [weather],
    });
    const session = new OpenAIConversationsSession({ client });
    const first = await run(agent, 'What is the weather in Lisbon?', { session });
    expect(first.finalOutput).toEqual(expect.any(String));
    const calls = first.newItems.filter((item) => item.type === 'tool_call_item');
    expect(calls.length).toBeGreaterThan(0);
    const second = await run(agent, 'And in Porto?', { session });
    expect(second.finalOutput).toEqual(expect.any(String));

    // The conversation holds both turns' input and output, tool call and output included.
    const items = await session.getItems();
    const types = items.map((item) => item.type ?? 'message');
    expect(types).toContain('function_call');
    // The SDK names a call's output `function_call_result` among its own items.
    expect(types).toContain('function_call_result');

    // Each model call's usage, as the SDK read it, is its usage record's.
    const responses = [...first.rawResponses, ...second.rawResponses];
    await gateway.charged();
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(records).toHaveLength(responses.length);
    const billed = records.map((r) => `${r.promptTokens}/${r.completionTokens}`).sort();
    const read = responses.map((r) => `${r.usage.inputTokens}/${r.usage.outputTokens}`).sort();
    expect(billed).toEqual(read);
  });
});
