import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeys, usageRecords } from '../../../src/shared/db/schema.js';
import { expectError, expectNoUpstreamDetails } from '../../helpers/envelope.js';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const stores = await oneStore();

describe.each(stores)('errors on /v1 (%s)', (store) => {
  let gateway: TestGateway;
  let secret: string;
  let orgId: string;

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${gateway.baseURL}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const hello = { model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }] };

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_MAX_BODY_BYTES: '4096' });
    ({ secret, orgId } = await gateway.tenant());
  });
  afterAll(() => gateway?.close());

  describe('401 unauthorized', () => {
    const cases: Array<[string, Record<string, string>]> = [
      ['no Authorization header', {}],
      ['an empty header', { authorization: '' }],
      ['Bearer with no token', { authorization: 'Bearer ' }],
      ['another scheme', { authorization: 'Basic dXNlcjpwYXNz' }],
      ['a malformed key', { authorization: 'Bearer not-a-key' }],
      ['a well-formed unknown key', { authorization: `Bearer sk-gw-${'A'.repeat(43)}` }],
    ];
    it.each(cases)('for %s', async (_, headers) => {
      const response = await fetch(`${gateway.baseURL}/models`, { headers });
      await expectError(response, 401, 'unauthorized', 'auth_error');
    });

    it('ignores x-api-key', async () => {
      const response = await fetch(`${gateway.baseURL}/models`, { headers: { 'x-api-key': secret } });
      await expectError(response, 401, 'unauthorized', 'auth_error');
    });

    it('for a revoked key, from the next request on', async () => {
      const tenant = await gateway.tenant();
      const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
      await client.models.list();
      await gateway.services.keys.revoke(tenant.keyId);
      const error = await client.models.list().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('unauthorized');
    });

    it('for an expired key', async () => {
      const tenant = await gateway.tenant({ key: {} });
      await gateway.services.db
        .update(apiKeys)
        .set({ expiresAt: new Date(Date.now() - 1000) })
        .where(eq(apiKeys.id, tenant.keyId));
      const response = await fetch(`${gateway.baseURL}/models`, {
        headers: { authorization: `Bearer ${tenant.secret}` },
      });
      const error = await expectError(response, 401, 'unauthorized', 'auth_error');
      expect(error.message).toMatch(/expired/);
    });
  });

  describe('400 model_not_found', () => {
    it.each([
      ['missing', { messages: hello.messages }],
      ['empty', { model: '', messages: hello.messages }],
      ['not a string', { model: 42, messages: hello.messages }],
      ['unknown', { model: 'no-such-model', messages: hello.messages }],
    ])('when the model is %s', async (_, body) => {
      await expectError(await post('/chat/completions', body), 400, 'model_not_found', 'invalid_request_error');
    });

    it('when the model is disabled', async () => {
      await gateway.services.catalog.add({
        id: 'off-model',
        displayName: 'Off',
        hfRepoId: 'x/off',
        taskType: 'chat',
        contextLength: 1024,
        enabled: false,
      });
      await expectError(
        await post('/chat/completions', { ...hello, model: 'off-model' }),
        400,
        'model_not_found',
        'invalid_request_error',
      );
    });

    it('when chat names an embedding model, and embeddings a chat model', async () => {
      await expectError(
        await post('/chat/completions', { ...hello, model: 'sim-embed' }),
        400,
        'model_not_found',
        'invalid_request_error',
      );
      const error = await expectError(
        await post('/embeddings', { model: 'sim-chat', input: 'x' }),
        400,
        'model_not_found',
        'invalid_request_error',
      );
      expect(error.message).toMatch(/not an embedding model/);
    });
  });

  it('400 invalid_request for bad messages, with details', async () => {
    const error = await expectError(
      await post('/chat/completions', { model: 'sim-chat', messages: [{ content: 'no role' }] }),
      400,
      'invalid_request',
      'invalid_request_error',
    );
    expect(error.details).toEqual([{ field: 'messages[0].role', message: expect.any(String) }]);
    await expectError(
      await post('/chat/completions', { model: 'sim-chat' }),
      400,
      'invalid_request',
      'invalid_request_error',
    );
    await expectError(
      await post('/embeddings', { model: 'sim-embed', input: [] }),
      400,
      'invalid_request',
      'invalid_request_error',
    );
  });

  it('400 invalid_json for a body that is not JSON, or not an object', async () => {
    await expectError(await post('/chat/completions', '{"model": '), 400, 'invalid_json', 'invalid_request_error');
    await expectError(await post('/chat/completions', '[1,2]'), 400, 'invalid_json', 'invalid_request_error');
  });

  it('413 request_too_large past TOLLGATE_MAX_BODY_BYTES', async () => {
    const big = { ...hello, messages: [{ role: 'user', content: 'x'.repeat(5000) }] };
    await expectError(await post('/chat/completions', big), 413, 'request_too_large', 'invalid_request_error');
  });

  it('404 not_found for an unknown route, with or without a key', async () => {
    await expectError(await fetch(`${gateway.baseURL}/nope`), 404, 'not_found', 'invalid_request_error');
    await expectError(await post('/completions/legacy', {}), 404, 'not_found', 'invalid_request_error');
    await expectError(await fetch(`${gateway.url}/`), 404, 'not_found', 'invalid_request_error');
  });

  it('402 insufficient_funds when the balance is zero, and when it is negative', async () => {
    const broke = await gateway.tenant({ credit: '0' });
    const response = await post('/chat/completions', hello, { authorization: `Bearer ${broke.secret}` });
    await expectError(response, 402, 'insufficient_funds', 'billing_error');
    await gateway.services.wallets.credit(broke.orgId, 'adjustment', -1n, 'test');
    await expectError(
      await post('/embeddings', { model: 'sim-embed', input: 'x' }, { authorization: `Bearer ${broke.secret}` }),
      402,
      'insufficient_funds',
      'billing_error',
    );
  });

  it('501 not_implemented for audio transcription, after auth', async () => {
    const error = await expectError(await post('/audio/transcriptions', {}), 501, 'not_implemented', 'not_implemented');
    expect(error.message).toMatch(/coming soon/i);
    await expectError(
      await fetch(`${gateway.baseURL}/audio/transcriptions`, { method: 'POST' }),
      401,
      'unauthorized',
      'auth_error',
    );
  });

  it('503 pricing_unavailable, with Retry-After, for a model that has no price', async () => {
    await gateway.services.catalog.add({
      id: 'unpriced',
      displayName: 'Unpriced',
      hfRepoId: 'x/unpriced',
      taskType: 'chat',
      contextLength: 1024,
      enabled: true,
    });
    const response = await post('/chat/completions', { ...hello, model: 'unpriced' });
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    await expectError(response, 503, 'pricing_unavailable', 'billing_error');
  });

  it('503 upstream_error, with Retry-After, for a priced model no engine serves', async () => {
    await gateway.services.catalog.add({
      id: 'engineless',
      displayName: 'Engineless',
      hfRepoId: 'x/engineless',
      taskType: 'chat',
      contextLength: 1024,
      enabled: true,
    });
    await gateway.services.catalog.setPrice('engineless', 1n, 1n);
    const response = await post('/chat/completions', { ...hello, model: 'engineless' });
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    await expectError(response, 503, 'upstream_error', 'upstream_error');
  });

  describe('upstream failures', () => {
    it('502 upstream_error when the engine answers 500, with nothing of the engine in it', async () => {
      const response = await post('/chat/completions', { ...hello, sim_fail: 'leak' });
      const text = await response.clone().text();
      await expectError(response, 502, 'upstream_error', 'upstream_error');
      expectNoUpstreamDetails(text);
    });

    it('relays an engine 400 as invalid_request with a sanitized message', async () => {
      const response = await post('/chat/completions', { ...hello, max_tokens: 1_000_000 });
      const text = await response.clone().text();
      const error = await expectError(response, 400, 'invalid_request', 'invalid_request_error');
      expect(error.message).toMatch(/context length/i);
      expectNoUpstreamDetails(text);
    });

    it('ends a stream that fails midway with an error event and [DONE]', async () => {
      for (const mode of ['midstream', 'drop']) {
        const response = await post('/chat/completions', { ...hello, stream: true, sim_fail: mode });
        expect(response.status).toBe(200);
        const events = (await response.text()).split('\n\n').filter(Boolean);
        expect(events.at(-1)).toBe('data: [DONE]');
        const error = JSON.parse(events.at(-2)!.slice('data: '.length));
        expect(error.error.code).toBe('upstream_error');
        expectNoUpstreamDetails(events.join('\n'));
      }
    });

    it('makes the openai SDK throw on a mid-stream failure', async () => {
      const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
      const stream = await client.chat.completions.create({
        ...hello,
        stream: true,
        sim_fail: 'midstream',
      } as OpenAI.ChatCompletionCreateParamsStreaming);
      await expect(async () => {
        for await (const _ of stream) void _;
      }).rejects.toThrow(/incomplete/);
    });
  });

  describe('X-Project-ID', () => {
    it('attributes usage to a project of the same organization', async () => {
      const project = await gateway.services.projects.create({ orgId: orgId, createdBy: null, name: 'search' });
      const response = await post('/chat/completions', hello, { 'x-project-id': project.id });
      expect(response.status).toBe(200);
      const requestId = response.headers.get('x-request-id')!;
      await gateway.services.applier.settled(5_000);
      const [record] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.id, requestId));
      expect(record!.projectId).toBe(project.id);
    });

    it("refuses another organization's project, and an unknown one, with 403 project_not_found", async () => {
      const other = await gateway.tenant();
      const foreign = await gateway.services.projects.create({ orgId: other.orgId, createdBy: null, name: 'theirs' });
      await expectError(
        await post('/chat/completions', hello, { 'x-project-id': foreign.id }),
        403,
        'project_not_found',
        'invalid_request_error',
      );
      await expectError(
        await post('/chat/completions', hello, { 'x-project-id': 'proj_unknown' }),
        403,
        'project_not_found',
        'invalid_request_error',
      );
    });

    it('holds a project-scoped key to its own project, and books its usage there', async () => {
      const p1 = await gateway.services.projects.create({ orgId: orgId, createdBy: null, name: 'p1' });
      const p2 = await gateway.services.projects.create({ orgId: orgId, createdBy: null, name: 'p2' });
      const { key, secret: scoped } = await gateway.services.keys.create({ orgId, name: 'p1 only', projectId: p1.id });
      const asScoped = (headers: Record<string, string>) =>
        post('/chat/completions', hello, { authorization: `Bearer ${scoped}`, ...headers });
      const body = await expectError(await asScoped({ 'x-project-id': p2.id }), 403, 'forbidden', 'auth_error');
      expect(body.message).not.toContain(p2.id);
      for (const headers of [{}, { 'x-project-id': p1.id }] as Array<Record<string, string>>) {
        const response = await asScoped(headers);
        expect(response.status).toBe(200);
        await gateway.services.applier.settled(5_000);
        const [record] = await gateway.services.db
          .select()
          .from(usageRecords)
          .where(eq(usageRecords.id, response.headers.get('x-request-id')!));
        expect(record!.projectId).toBe(p1.id);
      }
      const p2Usage = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.projectId, p2.id));
      expect(p2Usage).toHaveLength(0);
      await gateway.services.keys.revoke(key.id);
    });

    it('never echoes a long X-Project-ID back', async () => {
      const huge = `proj_${'x'.repeat(15_000)}`;
      const response = await post('/chat/completions', hello, { 'x-project-id': huge });
      const body = await expectError(response, 403, 'project_not_found', 'invalid_request_error');
      expect(JSON.stringify(body).length).toBeLessThan(500);
    });
  });
});
