import { describe, expect, it } from 'vitest';
import { clientBodyForEngine, WrittenJson } from '../../../src/gateway/proxy/client-body.js';
import { engineMembersFor, withEngineFields } from '../../../src/gateway/proxy/engine-fields.js';
import type { UpstreamTarget } from '../../../src/gateway/engines/types.js';
import { sentBody } from '../../../src/gateway/requests/sent-body.js';

const target = (over: Partial<UpstreamTarget>): UpstreamTarget => ({
  baseUrl: 'http://127.0.0.1:1/v1',
  servedModelName: 'served',
  headers: {},
  replicaId: 'm/0',
  release: () => {},
  markFailed: () => {},
  ...over,
});
/** What every chat body is sent with: a stream with its usage (`clientBodyForEngine`). */
const STREAMED = { stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } };
const call = { salt: () => 'S'.repeat(43), priority: 3 };
const text = (body: unknown) => (body instanceof WrittenJson ? body.bytes.toString('utf8') : JSON.stringify(body));

describe('the fields an engine is sent beside the body', () => {
  it('by engine: vLLM its salt, and the band as priority only when it schedules by priority; llama.cpp no prompt cache; others nothing', () => {
    expect(engineMembersFor(target({}), call)).toBe(`"cache_salt":"${'S'.repeat(43)}"`);
    const priority = { cacheSharing: 'per-organization', schedulingPolicy: 'priority' } as const;
    expect(engineMembersFor(target({ tenancy: priority }), call)).toBe(`"cache_salt":"${'S'.repeat(43)}","priority":3`);
    const shared = { cacheSharing: 'shared', schedulingPolicy: 'priority' } as const;
    expect(engineMembersFor(target({ tenancy: shared }), call)).toBe('"priority":3');
    expect(engineMembersFor(target({ engineKind: 'llamacpp' }), call)).toBe('"cache_prompt":false');
    expect(engineMembersFor(target({ engineKind: 'llamacpp', tenancy: shared }), call)).toBe('');
    expect(engineMembersFor(target({ engineKind: 'openai-compatible' }), call)).toBe('');
  });

  it("puts them in front of the client's own bytes without copying the prompt, and leaves a body alone when there are none", () => {
    const raw = Buffer.from(' {"model":"served","messages":[{"role":"user","content":"hi"}]}');
    const body = JSON.parse(raw.toString()) as Record<string, unknown>;
    const written = clientBodyForEngine(raw, body, 'served');
    const salted = withEngineFields(written, '"cache_salt":"x"', body) as WrittenJson;
    expect(JSON.parse(text(salted))).toEqual({ cache_salt: 'x', ...STREAMED, ...body });
    expect(salted.parts.at(-1)!.buffer).toBe(raw.buffer);
    expect(withEngineFields(written, '', body)).toBe(written);
  });

  it("drops the client's own engine fields however written: escaped, repeated, or alone with nothing to add", () => {
    const raw = Buffer.from(
      '{"cache_salt":"stolen","model":"served","cache\\u005fsalt":"again","priority":-9,"messages":[],"cache_prompt":true}',
    );
    const body = JSON.parse(raw.toString()) as Record<string, unknown>;
    const sent = withEngineFields(clientBodyForEngine(raw, body, 'served'), '"cache_salt":"mine"', body);
    expect(text(sent)).not.toContain('stolen');
    expect(text(sent)).not.toContain('again');
    expect(JSON.parse(text(sent))).toEqual({ cache_salt: 'mine', model: 'served', messages: [], ...STREAMED });
    expect(JSON.parse(text(withEngineFields(clientBodyForEngine(raw, body, 'served'), '', body)))).toEqual({
      model: 'served',
      messages: [],
      ...STREAMED,
    });
  });

  it("sets them on a translation's bytes and on an embeddings object", () => {
    const translated = sentBody({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }, true);
    const sent = withEngineFields(translated.writtenFor('served'), '"priority":2', { max_tokens: 5 });
    expect(JSON.parse(text(sent))).toMatchObject({ priority: 2, model: 'served', max_tokens: 5 });
    const embeddings = { model: 'served', input: 'x', cache_salt: 'stolen' };
    expect(withEngineFields(embeddings, '"cache_salt":"mine"', embeddings)).toEqual({
      model: 'served',
      input: 'x',
      cache_salt: 'mine',
    });
    expect(embeddings.cache_salt).toBe('stolen');
  });
});
