import { afterEach, describe, expect, it, vi } from 'vitest';
import { toolsJsonOf } from '../../../src/gateway/proxy/token-counts.js';
import { sentBody } from '../../../src/gateway/requests/sent-body.js';
import { ToolsJsonCache, sameJson } from '../../../src/gateway/requests/messages/tools-json.js';
import { chatBodyOf } from '../../../src/gateway/requests/messages/translate.js';

type Json = Record<string, unknown>;

/** A Messages body as parsed from the client's bytes: a fresh object tree each time, as each request's is. */
const bodyWith = (tools: unknown[]): Json =>
  JSON.parse(JSON.stringify({ model: 'm', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], tools }));

const tools = [
  {
    name: 'Read',
    description: 'Reads a file.',
    input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  { name: 'Bash', description: 'Runs a command.', input_schema: { type: 'object', properties: { cmd: {} } } },
];

/** What the engine is sent for a body, the tools' JSON taken from the cache when it has them. */
function sentFor(cache: ToolsJsonCache, orgId: string, body: Json): string {
  const chat = chatBodyOf(body);
  cache.reuse(orgId, body.tools, chat.tools);
  return sentBody(chat, false).forModel('served');
}

const written = (body: Json) => sentBody(chatBodyOf(body), false).forModel('served');

describe('an organization’s tools written once', () => {
  afterEach(() => vi.restoreAllMocks());

  it('gives equal tools the text JSON.stringify writes, without writing it again', () => {
    const cache = new ToolsJsonCache();
    expect(sentFor(cache, 'org_a', bodyWith(tools))).toBe(written(bodyWith(tools)));
    const again = bodyWith(tools);
    const stringify = vi.spyOn(JSON, 'stringify');
    const chat = chatBodyOf(again);
    cache.reuse('org_a', again.tools, chat.tools);
    toolsJsonOf(chat.tools as unknown[]);
    expect(stringify).not.toHaveBeenCalled();
  });

  it('writes tools anew when anything in them differs: a deep value, a member’s order, one tool more', () => {
    const cache = new ToolsJsonCache();
    sentFor(cache, 'org_a', bodyWith(tools));
    const deeper = structuredClone(tools);
    (deeper[0]!.input_schema.properties.path as Json).type = 'integer';
    expect(sentFor(cache, 'org_a', bodyWith(deeper))).toBe(written(bodyWith(deeper)));
    const reordered = [{ description: tools[0]!.description, name: 'Read', input_schema: tools[0]!.input_schema }];
    expect(sentFor(cache, 'org_a', bodyWith(reordered))).toBe(written(bodyWith(reordered)));
    const more = [...tools, { name: 'Grep', input_schema: { type: 'object' } }];
    expect(sentFor(cache, 'org_a', bodyWith(more))).toBe(written(bodyWith(more)));
  });

  it('never serves one organization’s request from another’s tools, even equal ones', () => {
    const cache = new ToolsJsonCache();
    sentFor(cache, 'org_a', bodyWith(tools));
    // The same tools from another organization are written afresh: no timing tells it what org_a sends.
    const other = bodyWith(tools);
    const stringify = vi.spyOn(JSON, 'stringify');
    const chat = chatBodyOf(other);
    cache.reuse('org_b', other.tools, chat.tools);
    expect(stringify).toHaveBeenCalledWith(chat.tools);
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
