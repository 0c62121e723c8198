import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdmin } from './harness.js';

describe('admin API: models and prices', () => {
  let h: Awaited<ReturnType<typeof startAdmin>>;
  beforeAll(async () => {
    h = await startAdmin();
  });
  afterAll(() => h.store.close());

  const qwen = {
    id: 'Qwen/Qwen2.5-7B-Instruct',
    display_name: 'qwen-7b',
    hf_repo_id: 'Qwen/Qwen2.5-7B-Instruct',
    task_type: 'chat',
    context_length: 32768,
  };

  it('adds a model whose id has a slash, and lists it without a price', async () => {
    const created = await h.call('POST', '/models', qwen);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      ...qwen,
      object: 'model',
      enabled: true,
      created_at: expect.any(String),
      price: null,
    });
    expect((await h.call('GET', '/models')).body.data).toContainEqual(created.body);
  });

  it('answers 409 conflict for a duplicate id, display name or repo id', async () => {
    const res = await h.call('POST', '/models', { ...qwen, id: 'other-id' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('conflict');
  });

  it('validates a new model', async () => {
    const res = await h.call('POST', '/models', {
      id: '-bad id',
      display_name: '',
      hf_repo_id: 'x/y',
      task_type: 'vision',
      context_length: 0,
    });
    expect(res.status).toBe(400);
    expect(res.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'context_length',
      'display_name',
      'id',
      'task_type',
    ]);
  });

  it('disables and re-enables a model by a slashed id; disabled models list only with include_disabled', async () => {
    const off = await h.call('PATCH', `/models/${qwen.id}`, { enabled: false });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ id: qwen.id, enabled: false });
    expect((await h.call('GET', '/models')).body.data.map((m: { id: string }) => m.id)).not.toContain(qwen.id);
    expect((await h.call('GET', '/models?include_disabled=true')).body.data.map((m: { id: string }) => m.id)).toContain(
      qwen.id,
    );
    const on = await h.call('PATCH', `/models/${qwen.id}`, {
      enabled: true,
      display_name: 'Qwen 7B',
      context_length: 16384,
    });
    expect(on.body).toMatchObject({ enabled: true, display_name: 'Qwen 7B', context_length: 16384 });
  });

  it('finds a model whose id has a colon when the path encodes it', async () => {
    await h.call('POST', '/models', {
      id: 'llama:8b',
      display_name: 'llama',
      hf_repo_id: 'meta/llama',
      task_type: 'chat',
      context_length: 8192,
    });
    expect((await h.call('PATCH', '/models/llama%3A8b', { context_length: 4096 })).body).toMatchObject({
      id: 'llama:8b',
      context_length: 4096,
    });
    expect(
      (await h.call('PUT', '/prices/llama%3A8b', { input_per_million: '0.1', output_per_million: '0.2' })).body
        .model_id,
    ).toBe('llama:8b');
  });

  it('refuses an empty patch, an unknown model, and a display name taken by another model', async () => {
    const empty = await h.call('PATCH', `/models/${qwen.id}`, {});
    expect(empty.body.error.details).toEqual([{ field: 'body', message: 'Send at least one field to change.' }]);
    expect((await h.call('PATCH', '/models/no/such/model', { enabled: false })).status).toBe(404);
    await h.call('POST', '/models', {
      id: 'embed',
      display_name: 'embed',
      hf_repo_id: 'BAAI/bge-small-en-v1.5',
      task_type: 'embedding',
      context_length: 512,
    });
    const clash = await h.call('PATCH', '/models/embed', { display_name: 'Qwen 7B' });
    expect(clash.status).toBe(409);
    expect(clash.body.error.code).toBe('conflict');
  });

  it('sets a price per million tokens, exactly, and shows it on the model', async () => {
    const res = await h.call('PUT', `/prices/${qwen.id}`, { input_per_million: '0.15', output_per_million: '0.60' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      object: 'price',
      model_id: qwen.id,
      currency: 'USD',
      input_per_million: '0.15',
      // No cached-input price given: the input price.
      cached_input_per_million: '0.15',
      output_per_million: '0.60',
      input_nanos_per_token: '150',
      cached_input_nanos_per_token: '150',
      output_nanos_per_token: '600',
      // No batch prices given: the input and output prices.
      batch_input_per_million: '0.15',
      batch_output_per_million: '0.60',
      batch_input_nanos_per_token: '150',
      batch_output_nanos_per_token: '600',
      updated_at: expect.any(String),
    });
    expect((await h.call('GET', '/prices')).body.data).toContainEqual(res.body);
    const model = (await h.call('GET', '/models')).body.data.find((m: { id: string }) => m.id === qwen.id);
    expect(model.price).toEqual({
      input_per_million: '0.15',
      cached_input_per_million: '0.15',
      output_per_million: '0.60',
      batch_input_per_million: '0.15',
      batch_output_per_million: '0.60',
    });
    const again = await h.call('PUT', `/prices/${qwen.id}`, { input_per_million: '1', output_per_million: '2.5' });
    expect(again.body).toMatchObject({
      input_per_million: '1.00',
      output_per_million: '2.50',
      input_nanos_per_token: '1000',
    });
  });

  it('reads one price by a slashed id (operator token required); 404 for an unknown model or one without a price', async () => {
    const set = await h.call('PUT', `/prices/${qwen.id}`, { input_per_million: '0.15', output_per_million: '0.60' });
    const one = await h.call('GET', `/prices/${qwen.id}`);
    expect(one).toMatchObject({ status: 200, body: set.body });
    expect((await h.call('GET', `/prices/${encodeURIComponent(qwen.id)}`)).body).toEqual(set.body);

    const unknown = await h.call('GET', '/prices/no/such/model');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'not_found', message: 'Model no/such/model does not exist.' });
    await h.call('POST', '/models', { ...qwen, id: 'unpriced', display_name: 'unpriced', hf_repo_id: 'x/unpriced' });
    const unpriced = await h.call('GET', '/prices/unpriced');
    expect(unpriced.status).toBe(404);
    expect(unpriced.body.error.message).toBe(
      'Model unpriced has no price: set one with PUT /admin/v1/prices/unpriced.',
    );

    const anonymous = await h.app.request(`/admin/v1/prices/${qwen.id}`);
    expect(anonymous.status).toBe(401);
    const member = await h.app.request(`/admin/v1/prices/${qwen.id}`, { headers: { authorization: 'Bearer tg-x' } });
    expect(member.status).toBe(401);
  });

  it('sets a cached-input price, never above the input price; a price set again without one goes back to the input price', async () => {
    const res = await h.call('PUT', `/prices/${qwen.id}`, {
      input_per_million: '0.15',
      cached_input_per_million: '0.015',
      output_per_million: '0.60',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ cached_input_per_million: '0.015', cached_input_nanos_per_token: '15' });
    const above = await h.call('PUT', `/prices/${qwen.id}`, {
      input_per_million: '0.15',
      cached_input_per_million: '0.151',
      output_per_million: '0.60',
    });
    expect(above.status).toBe(400);
    expect(above.body.error.details).toEqual([
      { field: 'cached_input_per_million', message: 'cached_input_per_million cannot be above input_per_million.' },
    ]);
    const again = await h.call('PUT', `/prices/${qwen.id}`, { input_per_million: '0.20', output_per_million: '0.60' });
    expect(again.body).toMatchObject({ cached_input_per_million: '0.20', cached_input_nanos_per_token: '200' });
  });

  it('sets batch prices, never above the input and output prices; shown in /v1/pricing; unset again, the usual prices', async () => {
    const res = await h.call('PUT', `/prices/${qwen.id}`, {
      input_per_million: '0.15',
      cached_input_per_million: '0.100',
      output_per_million: '0.60',
      batch_input_per_million: '0.075',
      batch_output_per_million: '0.30',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      batch_input_per_million: '0.075',
      batch_output_per_million: '0.30',
      batch_input_nanos_per_token: '75',
      batch_output_nanos_per_token: '300',
    });
    const pricing = await h.app.request('/v1/pricing');
    const shown = ((await pricing.json()) as { data: Array<Record<string, string>> }).data.find(
      (p) => p.model === qwen.id,
    );
    expect(shown).toMatchObject({
      batch_input_per_million_tokens: '0.075',
      batch_output_per_million_tokens: '0.30',
      batch_input_nanos_per_token: '75',
      batch_output_nanos_per_token: '300',
    });
    const above = await h.call('PUT', `/prices/${qwen.id}`, {
      input_per_million: '0.15',
      output_per_million: '0.60',
      batch_input_per_million: '0.151',
      batch_output_per_million: '0.601',
    });
    expect(above.status).toBe(400);
    expect(above.body.error.details).toEqual([
      { field: 'batch_input_per_million', message: 'batch_input_per_million cannot be above input_per_million.' },
      { field: 'batch_output_per_million', message: 'batch_output_per_million cannot be above output_per_million.' },
    ]);
    const again = await h.call('PUT', `/prices/${qwen.id}`, { input_per_million: '0.20', output_per_million: '0.70' });
    expect(again.body).toMatchObject({ batch_input_per_million: '0.20', batch_output_per_million: '0.70' });
  });

  it('refuses prices that are floats, negative or finer than 0.001 per million, naming the field', async () => {
    const res = await h.call('PUT', `/prices/${qwen.id}`, { input_per_million: 0.15, output_per_million: '0.0001' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details).toEqual([
      { field: 'input_per_million', message: expect.stringContaining('not JSON numbers') },
      { field: 'output_per_million', message: expect.stringContaining('more than 3 decimal places') },
    ]);
    const negative = await h.call('PUT', `/prices/${qwen.id}`, { input_per_million: '-1', output_per_million: '1' });
    expect(negative.body.error.details).toEqual([
      { field: 'input_per_million', message: 'A price cannot be negative.' },
    ]);
    expect(
      (await h.call('PUT', '/prices/missing-model', { input_per_million: '1', output_per_million: '1' })).status,
    ).toBe(404);
  });
});
