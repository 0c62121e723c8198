import { afterEach, describe, expect, it, vi } from 'vitest';
import { sentBody } from '../../../src/gateway/requests/sent-body.js';
import { TranslationJsonCache, sameJson } from '../../../src/gateway/requests/translation-json.js';
import { chatBodyOf as chatOfMessages } from '../../../src/gateway/requests/messages/translate.js';
import { chatBodyOf as chatOfResponses } from '../../../src/gateway/requests/responses/translate.js';

type Json = Record<string, unknown>;

/** A body as parsed from the client's bytes: a fresh object tree each time, as each request's is. */
const parsed = (body: Json): Json => JSON.parse(JSON.stringify(body));

const tools = [
  {
    name: 'Read',
    description: 'Reads a file.',
    input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  { name: 'Bash', description: 'Runs a command.', input_schema: { type: 'object', properties: { cmd: {} } } },
];

/** An agent's turns: each sends every earlier one again, then its own. */
const turns = [
  { role: 'user', content: 'Fix the failing test.' },
  {
    role: 'assistant',
    content: [
      { type: 'text', text: 'Reading it.' },
      { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a.test.ts' } },
    ],
  },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'expect(1).toBe(2)' }] },
];

const messagesBody = (count: number, withTools: unknown[] = tools): Json =>
  parsed({
    model: 'm',
    max_tokens: 64,
    system: 'You are an agent.',
    tools: withTools,
    messages: turns.slice(0, count),
  });

/** What the engine is sent for a translation, through the cache as an endpoint uses it. */
function sentChat(cache: TranslationJsonCache, orgId: string, chat: Json): string {
  const earlier = cache.reuse(orgId, chat);
  const text = sentBody(chat, false, cache.json).forModel('served');
  cache.keep(orgId, chat, earlier);
  return text;
}

/** What the engine is sent for a Messages body, through the cache. */
const sentFor = (cache: TranslationJsonCache, orgId: string, body: Json) =>
  sentChat(cache, orgId, chatOfMessages(body));

/** What the engine is sent for a body written afresh: the text the cache must give too. */
function written(body: Json): string {
  const { model: _client, ...rest } = chatOfMessages(parsed(body));
  return JSON.stringify({ model: 'served', ...rest });
}

/** The arguments JSON.stringify was called with while `step` ran. */
function stringified(step: () => unknown): unknown[] {
  const stringify = vi.spyOn(JSON, 'stringify');
  step();
  const calls = stringify.mock.calls.map(([value]) => value);
  stringify.mockRestore();
  return calls;
}

describe('an organization’s translations written once', () => {
  afterEach(() => vi.restoreAllMocks());

  it('sends exactly what JSON.stringify writes, turn after turn', () => {
    const cache = new TranslationJsonCache();
    for (let count = 1; count <= turns.length; count++) {
      const body = messagesBody(count);
      const fresh = JSON.parse(written(body)) as Json;
      expect(JSON.parse(sentFor(cache, 'org_a', body))).toEqual(fresh);
      expect(sentFor(cache, 'org_a', messagesBody(count))).toBe(
        sentBody(chatOfMessages(messagesBody(count)), false).forModel('served'),
      );
    }
  });

  it('writes only the new turn of a conversation, and not the tools again', () => {
    const cache = new TranslationJsonCache();
    sentFor(cache, 'org_a', messagesBody(2));
    const next = chatOfMessages(messagesBody(3));
    const calls = stringified(() => sentChat(cache, 'org_a', next));
    const messages = next.messages as Json[];
    // The system prompt, the user's first turn and the assistant's came from the kept text.
    expect(calls).not.toContain(next.tools);
    for (const message of messages.slice(0, 3)) expect(calls).not.toContain(message);
    expect(calls).toContain(messages[3]);
  });

  it('writes anew what differs: a deep value, a member’s order, one tool more, an earlier turn changed', () => {
    const cache = new TranslationJsonCache();
    sentFor(cache, 'org_a', messagesBody(3));
    const deeper = structuredClone(tools);
    (deeper[0]!.input_schema.properties.path as Json).type = 'integer';
    const reordered = [{ description: tools[0]!.description, name: 'Read', input_schema: tools[0]!.input_schema }];
    const more = [...tools, { name: 'Grep', input_schema: { type: 'object' } }];
    for (const changed of [deeper, reordered, more]) {
      const body = messagesBody(3, changed);
      expect(sentFor(cache, 'org_a', body)).toBe(sentBody(chatOfMessages(parsed(body)), false).forModel('served'));
    }
    const edited = messagesBody(3);
    ((edited.messages as Json[])[1]!.content as Json[])[0]!.text = 'Reading it again.';
    const sent = JSON.parse(sentFor(cache, 'org_a', edited)) as Json;
    expect((sent.messages as Json[])[2]).toMatchObject({ role: 'assistant', content: 'Reading it again.' });
    expect(sentFor(cache, 'org_a', edited)).toBe(sentBody(chatOfMessages(parsed(edited)), false).forModel('served'));
  });

  /**
   * Two sessions of one organization, their first turns kept: they differ from their first user
   * message on.
   */
  function twoSessionsKept() {
    const cache = new TranslationJsonCache();
    const session = (first: string) => (count: number) => {
      const body = messagesBody(count);
      (body.messages as Json[])[0]!.content = first;
      return body;
    };
    const [a, b] = [session('Fix the failing test.'), session('Write the docs.')];
    sentFor(cache, 'org_a', a(2));
    sentFor(cache, 'org_a', b(2));
    return { cache, a, b };
  }

  /**
   * Session `a`'s next turn reuses its own kept turn, and is sent exactly what a fresh writing
   * gives.
   */
  function expectReusesOwnTurn(cache: TranslationJsonCache, a: (count: number) => Json) {
    const next = chatOfMessages(a(3));
    const calls = stringified(() => sentChat(cache, 'org_a', next));
    expect(calls).not.toContain((next.messages as Json[])[1]);
    expect(JSON.parse(sentBody(next, false).forModel('served'))).toEqual(JSON.parse(written(a(3))));
  }

  it('keeps several conversations of one organization apart: each session reuses its own', () => {
    const { cache, a } = twoSessionsKept();
    expectReusesOwnTurn(cache, a);
  });

  it('keeps one copy of a conversation whose turns were in flight together: the other sessions stay kept', () => {
    const { cache, a, b } = twoSessionsKept();
    // Session b's agent sends nine requests at once (retries, sub-agents): each reuses the kept
    // turn before any is kept.
    const inFlight = Array.from({ length: 9 }, () => {
      const chat = chatOfMessages(b(3));
      return { chat, earlier: cache.reuse('org_a', chat) };
    });
    for (const { chat, earlier } of inFlight) {
      sentBody(chat, false, cache.json);
      cache.keep('org_a', chat, earlier);
    }
    // Before: nine copies of b's conversation, and a's (of eight kept each) forgotten.
    expectReusesOwnTurn(cache, a);
  });

  it('never serves one organization’s request from another’s translation, even an equal one', () => {
    const cache = new TranslationJsonCache();
    sentFor(cache, 'org_a', messagesBody(3));
    // The same conversation from another organization is written afresh: no timing tells it what
    // org_a sends.
    const other = chatOfMessages(messagesBody(3));
    const calls = stringified(() => sentChat(cache, 'org_b', other));
    expect(calls).toContain(other.tools);
    for (const message of other.messages as Json[]) expect(calls).toContain(message);
  });

  it('serves a Responses history (`store: false`) the same way', () => {
    const cache = new TranslationJsonCache();
    const input = [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'List the files.' }] },
      { type: 'function_call', call_id: 'call_1', name: 'shell', arguments: '{"cmd":"ls"}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'a.ts b.ts' },
    ];
    const body = (count: number) =>
      parsed({ model: 'm', instructions: 'You are Codex.', store: false, input: input.slice(0, count) });
    const first = chatOfResponses(body(2));
    sentChat(cache, 'org_a', first);
    const next = chatOfResponses(body(3));
    const calls = stringified(() => sentChat(cache, 'org_a', next));
    expect(calls).not.toContain((next.messages as Json[])[0]);
    expect(sentBody(next, false).forModel('s')).toBe(sentBody(chatOfResponses(body(3)), false).forModel('s'));
  });
});

describe('sameJson', () => {
  it('is true only for values JSON.stringify writes alike', () => {
    expect(sameJson({ a: 1, b: [1, 'x', null, true] }, { a: 1, b: [1, 'x', null, true] })).toBe(true);
    expect(sameJson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
    expect(sameJson({ a: [1] }, { a: { 0: 1 } })).toBe(false);
    expect(sameJson([1, 2], [1, 2, 3])).toBe(false);
    expect(sameJson({ a: '1' }, { a: 1 })).toBe(false);
    expect(sameJson({ a: null }, { a: {} })).toBe(false);
    expect(sameJson({ a: {} }, { a: {}, b: 1 })).toBe(false);
  });
});
