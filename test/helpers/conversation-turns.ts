import type OpenAI from 'openai';
import { expect } from 'vitest';

/**
 * `turns` turns of one conversation through `conversation`, each sent through the next client of
 * `clients` in turn (two replicas alternate), and each compared with the same conversation written
 * out: its items listed before the turn, plus the turn's input, sent as `input` alone. The engine's
 * prompt count (`usage.input_tokens`, what the usage record bills) must be the same for both.
 * Returns the prompt counts.
 */
export async function conversationTurns(clients: OpenAI[], conversation: string, turns: number): Promise<number[]> {
  const counts: number[] = [];
  for (let turn = 0; turn < turns; turn++) {
    const client = clients[turn % clients.length]!;
    const before = await allItems(client, conversation);
    const input = `Turn ${turn}: say something about the number ${turn * 7}.`;
    const inConversation = await client.responses.create({
      model: 'sim-chat',
      conversation,
      input,
      max_output_tokens: 8,
    });
    expect(inConversation.status).not.toBe('failed');
    const writtenOut = await client.responses.create({
      model: 'sim-chat',
      input: [...(before as unknown as OpenAI.Responses.ResponseInputItem[]), { role: 'user', content: input }],
      max_output_tokens: 8,
      store: false,
    });
    expect(inConversation.usage!.input_tokens, `turn ${turn}`).toBe(writtenOut.usage!.input_tokens);
    counts.push(inConversation.usage!.input_tokens);
    // The turn's input and output were appended, in order.
    const after = await allItems(client, conversation);
    expect(after.length).toBe(before.length + 1 + inConversation.output.length);
    expect(after.at(-1)).toMatchObject({ id: inConversation.output.at(-1)!.id });
  }
  return counts;
}

/** Every item of a conversation, oldest first, paged as the Agents SDK's session pages them. */
export async function allItems(client: OpenAI, conversation: string): Promise<Array<Record<string, unknown>>> {
  const items: Array<Record<string, unknown>> = [];
  for await (const item of client.conversations.items.list(conversation, { order: 'asc', limit: 7 }))
    items.push(item as unknown as Record<string, unknown>);
  return items;
}
