import { createOpenAI } from '@ai-sdk/openai';
import { generateText, type ModelMessage } from 'ai';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

/**
 * Issue 71's first finding, with the real client: the AI SDK's documented multi-turn pattern (the
 * messages, plus the first result's `response.messages`) over `@ai-sdk/openai`'s Responses
 * provider, which sends the earlier answer as an `item_reference`. The second turn must prompt as
 * many tokens as the same conversation written out, and each turn is billed the engine's counts.
 */
type Json = Record<string, any>;

describe("the AI SDK's Responses provider, multi-turn with its own history", () => {
  let gateway: TestGateway;
  let secret: string;

  beforeAll(async () => {
    gateway = await startTestGateway('pglite');
    ({ secret } = await gateway.tenant());
  });
  afterAll(async () => {
    await gateway?.close();
  });

  /** Every request the SDK makes, with the gateway's request id, through the SDK's own fetch. */
  const sent: { body: Json; requestId: string }[] = [];
  const recordingFetch: typeof fetch = async (input, init) => {
    const answer = await fetch(input, init);
    sent.push({ body: JSON.parse(init?.body as string) as Json, requestId: answer.headers.get('x-request-id')! });
    return answer;
  };
  const billedPrompt = async (requestId: string) => {
    await gateway.charged();
    const [record] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.id, requestId));
    return record!;
  };

  it('prompts the second turn with the whole conversation, billed as the engine counted', async () => {
    const provider = createOpenAI({ baseURL: gateway.baseURL, apiKey: secret, fetch: recordingFetch });
    const model = provider.responses('sim-chat');
    const messages: ModelMessage[] = [{ role: 'user', content: 'Name a colour.' }];
    const first = await generateText({ model, messages, maxOutputTokens: 16 });
    messages.push(...first.response.messages, { role: 'user', content: 'And another one?' });
    const second = await generateText({ model, messages, maxOutputTokens: 16 });

    expect(sent).toHaveLength(2);
    // The SDK's own shape: the earlier answer by reference (what the gateway once dropped).
    expect(JSON.stringify(sent[1]!.body.input)).toContain('item_reference');
    for (const [index, result] of [first, second].entries()) {
      const record = await billedPrompt(sent[index]!.requestId);
      expect(record.promptTokens).toBe(result.usage.inputTokens);
      expect(record.completionTokens).toBe(result.usage.outputTokens);
    }
    // The same conversation written out: as many prompt tokens as the second turn was billed.
    const writtenOut = {
      model: 'sim-chat',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'Name a colour.' }] },
        { role: 'assistant', content: [{ type: 'output_text', text: first.text }] },
        { role: 'user', content: [{ type: 'input_text', text: 'And another one?' }] },
      ],
    };
    const counted = await fetch(`${gateway.baseURL}/responses/input_tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(writtenOut),
    });
    const count = (await counted.json()) as Json;
    expect(counted.status, JSON.stringify(count)).toBe(200);
    expect((await billedPrompt(sent[1]!.requestId)).promptTokens).toBe(count.input_tokens);
  });
});
