import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway } from './harness.js';

describe('tollgate CLI against a running gateway', () => {
  let gw: Awaited<ReturnType<typeof startGateway>>;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(() => gw.close());

  it('runs the operator script: org, project, top-up, key create/update/revoke, wallet', async () => {
    const org = await gw.tollgate(['orgs', 'create', '--name', 'Acme', '--json']);
    expect(org).toMatchObject({ code: 0, stderr: '' });
    expect(org.json).toMatchObject({ object: 'organization', name: 'Acme', balance: '0.00' });
    const orgId: string = org.json.id;

    const project = await gw.tollgate(['projects', 'create', '--org', orgId, '--name', 'search', '--json']);
    expect(project.json).toMatchObject({ object: 'project', org_id: orgId, name: 'search' });

    const topup = await gw.tollgate([
      'wallet',
      'topup',
      '--org',
      orgId,
      '--amount',
      '12.50',
      '--note',
      'invoice 7',
      '--json',
    ]);
    expect(topup.code).toBe(0);
    expect(topup.json).toMatchObject({ object: 'wallet', balance: '12.50', balance_nanos: '12500000000' });

    const created = await gw.tollgate([
      'keys',
      'create',
      '--org',
      orgId,
      '--name',
      'ci',
      '--expiry',
      '30d',
      '--project',
      project.json.id,
      '--rpm',
      '30',
      '--concurrency',
      '2',
      '--tpm',
      '5000',
      '--monthly-tokens',
      'unlimited',
      '--store-request-data',
      '--json',
    ]);
    expect(created.code).toBe(0);
    expect(created.json).toMatchObject({
      object: 'api_key',
      org_id: orgId,
      project_id: project.json.id,
      name: 'ci',
      status: 'active',
      requests_per_minute: 30,
      max_concurrency: 2,
      tokens_per_minute: 5000,
      monthly_tokens: null,
      store_request_data: true,
      response_cache: false,
      secret: expect.stringMatching(/^sk-gw-/),
    });
    expect(created.json.expires_at).not.toBeNull();
    const keyId: string = created.json.id;
    expect((await gw.admin.services.keys.authenticate(`Bearer ${created.json.secret}`)).id).toBe(keyId);

    const updated = await gw.tollgate([
      'keys',
      'update',
      keyId,
      '--rpm',
      '120',
      '--tpm',
      'unlimited',
      '--response-cache',
      'true',
      '--store-request-data',
      'false',
      '--json',
    ]);
    expect(updated.json).toMatchObject({
      id: keyId,
      requests_per_minute: 120,
      tokens_per_minute: null,
      response_cache: true,
      store_request_data: false,
    });
    expect(updated.json).not.toHaveProperty('secret');

    const listed = await gw.tollgate(['keys', 'list', '--org', orgId, '--json']);
    expect(listed.json).toEqual({ object: 'list', data: [updated.json] });

    const revoked = await gw.tollgate(['keys', 'revoke', keyId, '--json']);
    expect(revoked.json).toMatchObject({ id: keyId, status: 'revoked' });
    await expect(gw.admin.services.keys.authenticate(`Bearer ${created.json.secret}`)).rejects.toMatchObject({
      code: 'unauthorized',
    });

    const adjusted = await gw.tollgate([
      'wallet',
      'adjust',
      '--org',
      orgId,
      '--amount',
      '-1.00',
      '--note',
      'correction',
      '--json',
    ]);
    expect(adjusted.json.balance).toBe('11.50');

    const wallet = await gw.tollgate(['wallet', 'show', '--org', orgId, '--json']);
    expect(wallet.code).toBe(0);
    expect(wallet.json).toMatchObject({
      object: 'wallet',
      org_id: orgId,
      balance: '11.50',
      balance_nanos: '11500000000',
    });
    expect(wallet.json.ledger.map((e: { kind: string; amount: string }) => [e.kind, e.amount])).toEqual([
      ['adjustment', '-1.00'],
      ['topup', '12.50'],
    ]);

    const text = await gw.tollgate(['wallet', 'show', '--org', orgId]);
    expect(text.stdout).toContain(`Balance of ${orgId}: 11.50 USD`);
    expect(text.stdout).toMatch(/adjustment\s+-1\.00\s+11\.50\s+correction/);
  }, 90_000);

  it('prints the secret once with a warning in human output', async () => {
    const orgId = (await gw.tollgate(['orgs', 'create', '--name', 'Human', '--json'])).json.id;
    const created = await gw.tollgate(['keys', 'create', '--org', orgId, '--name', 'laptop']);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/secret: sk-gw-[A-Za-z0-9_-]{43}\n/);
    expect(created.stdout).toContain('shown once');
    const list = await gw.tollgate(['keys', 'list', '--org', orgId]);
    expect(list.stdout).toMatch(/^ID\s+NAME\s+HINT\s+STATUS/);
    expect(list.stdout).toContain('laptop');
    expect(list.stdout).not.toMatch(/sk-gw-[A-Za-z0-9_-]{43}/);
  });

  it('manages models with slashes in their ids, and their prices', async () => {
    const id = 'Qwen/Qwen2.5-7B-Instruct';
    const added = await gw.tollgate([
      'models',
      'add',
      '--id',
      id,
      '--name',
      'qwen-7b',
      '--hf-repo',
      id,
      '--task',
      'chat',
      '--context-length',
      '32768',
      '--json',
    ]);
    expect(added.json).toMatchObject({ object: 'model', id, enabled: true, price: null });
    const priced = await gw.tollgate(['prices', 'set', '--model', id, '--input', '0.15', '--output', '0.60', '--json']);
    expect(priced.json).toMatchObject({
      object: 'price',
      model_id: id,
      input_per_million: '0.15',
      output_per_million: '0.60',
      input_nanos_per_token: '150',
    });
    expect((await gw.tollgate(['models', 'disable', id, '--json'])).json.enabled).toBe(false);
    expect((await gw.tollgate(['models', 'list', '--json'])).json.data).toEqual([]);
    const all = await gw.tollgate(['models', 'list', '--all', '--json']);
    expect(all.json.data).toEqual([
      expect.objectContaining({
        id,
        enabled: false,
        price: {
          input_per_million: '0.15',
          cached_input_per_million: '0.15',
          output_per_million: '0.60',
          batch_input_per_million: '0.15',
          batch_output_per_million: '0.60',
        },
      }),
    ]);
    expect((await gw.tollgate(['models', 'enable', id])).stdout).toBe(`Model ${id} is enabled.\n`);
    const prices = await gw.tollgate(['prices', 'list', '--json']);
    expect(prices.json.data).toEqual([priced.json]);
    const cached = ['prices', 'set', '--model', id, '--input', '0.15', '--output', '0.60', '--cached-input', '0.015'];
    expect((await gw.tollgate(cached)).stdout).toBe(
      `Price of ${id}: input 0.15, cached input 0.015, output 0.60, batch input 0.15, batch output 0.60 USD per million tokens.\n`,
    );
    const batch = [...cached, '--batch-input', '0.075', '--batch-output', '0.30'];
    expect((await gw.tollgate(batch)).stdout).toBe(
      `Price of ${id}: input 0.15, cached input 0.015, output 0.60, batch input 0.075, batch output 0.30 USD per million tokens.\n`,
    );
  }, 60_000);
});
