import { beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../helpers/envelope.js';
import { oneStore, TEST_MODELS, useTestGateway } from '../../helpers/gateway.js';

const stores = await oneStore();

describe.each(stores)('models and pricing (%s)', (store) => {
  const t = useTestGateway(store);
  beforeAll(async () => {
    await t.gateway.services.catalog.add({
      id: 'hidden',
      displayName: 'Hidden',
      hfRepoId: 'x/hidden',
      taskType: 'chat',
      contextLength: 1,
      enabled: false,
    });
  });

  it('lists enabled models with OpenAI fields and ours', async () => {
    const page = await t.client.models.list();
    const ids = page.data.map((m) => m.id);
    expect(ids.sort()).toEqual(['sim-chat', 'sim-embed', 'sim-reasoner']);
    const chat = page.data.find((m) => m.id === 'sim-chat') as unknown as Record<string, unknown>;
    expect(chat).toMatchObject({
      object: 'model',
      owned_by: 'tollgate',
      display_name: TEST_MODELS.chat.displayName,
      hf_repo_id: TEST_MODELS.chat.hfRepoId,
      task_type: 'chat',
      context_length: 8192,
    });
    expect(typeof chat.created).toBe('number');
  });

  it('filters by task_type', async () => {
    const { secret } = await t.gateway.tenant();
    const response = await fetch(`${t.gateway.baseURL}/models?task_type=embedding`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    const body = (await response.json()) as { object: string; data: Array<{ id: string }> };
    expect(body.object).toBe('list');
    expect(body.data.map((m) => m.id)).toEqual(['sim-embed']);
    const bad = await fetch(`${t.gateway.baseURL}/models?task_type=video`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    await expectError(bad, 400, 'invalid_request', 'invalid_request_error');
  });

  it('gets one model by id, display name or a repo id with a slash', async () => {
    expect((await t.client.models.retrieve('sim-chat')).id).toBe('sim-chat');
    expect((await t.client.models.retrieve(TEST_MODELS.chat.hfRepoId)).id).toBe('sim-chat');
    expect((await t.client.models.retrieve('Sim Chat')).id).toBe('sim-chat');
  });

  it('answers 404 model_not_found for unknown and disabled models', async () => {
    const { secret } = await t.gateway.tenant();
    for (const name of ['nope', 'hidden', 'org/nope']) {
      const response = await fetch(`${t.gateway.baseURL}/models/${name}`, {
        headers: { authorization: `Bearer ${secret}` },
      });
      await expectError(response, 404, 'model_not_found', 'invalid_request_error');
    }
  });

  it('publishes prices without a key, exact to the nano-unit', async () => {
    const response = await fetch(`${t.gateway.baseURL}/pricing`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { object: string; currency: string; data: Array<Record<string, unknown>> };
    expect(body.currency).toBe('USD');
    const chat = body.data.find((p) => p.model === 'sim-chat');
    expect(chat).toMatchObject({
      input_per_million_tokens: '0.15',
      // No cached-input price set: the input price.
      cached_input_per_million_tokens: '0.15',
      output_per_million_tokens: '0.60',
      input_nanos_per_token: '150',
      cached_input_nanos_per_token: '150',
      output_nanos_per_token: '600',
      task_type: 'chat',
    });
    expect(body.data.some((p) => p.model === 'hidden')).toBe(false);
  });
});
