import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../src/surfaces/cli/main.js';
import { ADMIN_TOKEN } from '../admin/harness.js';
import { expectSumsAddUp } from '../../platform/costs/sums.js';
import { startGateway } from './harness.js';

describe('tollgate CLI: rate cards, conversion rates and cost reports', () => {
  let gw: Awaited<ReturnType<typeof startGateway>>;
  /** `main` in this process, against the gateway over HTTP. */
  const tollgate = async (...args: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await main([...args, '--url', gw.url, '--token', ADMIN_TOKEN], {
      stdout: (text) => (stdout += text),
      stderr: (text) => (stderr += text),
    });
    return { code, stdout, stderr, json: args.includes('--json') && stdout ? JSON.parse(stdout) : undefined };
  };

  beforeAll(async () => {
    gw = await startGateway();
    const { clusters, orgs, users } = gw.admin.services;
    await clusters.addProfile({ name: 'h100x8', gpusPerNode: 8 });
    await clusters.addNode({ profile: 'h100x8', address: 'h100-0.internal' });
    const org = await orgs.create('Acme');
    const owner = await users.create({
      orgId: org.id,
      name: 'Owner',
      email: 'owner@acme.example',
      password: 'a long enough password',
      role: 'owner',
    });
    const { cluster } = await clusters.create({
      orgId: org.id,
      name: 'train',
      profile: 'h100x8',
      nodeCount: 1,
      publicDomain: 'train.example.com',
      createdBy: owner.id,
    });
    await gw.admin.services.db.execute(
      sql`update node_allocations set allocated_at = '2025-05-31T12:00:00Z', released_at = '2025-06-01T12:30:00Z' where cluster_id = ${cluster.id}`,
    );
  });
  afterAll(() => gw.close());

  it('adds, lists and deletes rate cards; the gateway names each bad flag', async () => {
    const added = await tollgate(
      'rate-cards',
      'add',
      '--profile',
      'h100x8',
      '--currency',
      'USD',
      '--node-hour',
      '4',
      '--gpu-hour',
      '1.25',
      '--from',
      '2025-01-01',
      '--json',
    );
    expect(added).toMatchObject({ code: 0, stderr: '' });
    expect(added.json).toMatchObject({
      object: 'rate_card',
      profile: 'h100x8',
      currency: 'USD',
      node_hour_price: '4',
      gpu_hour_price: '1.25',
      effective_to: null,
    });
    const human = await tollgate(
      'rate-cards',
      'add',
      '--profile',
      'h100x8',
      '--currency',
      'USD',
      '--node-hour',
      '5',
      '--gpu-hour',
      '1.5',
      '--from',
      '2025-06-01T00:00:00Z',
    );
    expect(human.stdout).toMatch(
      /^Added rate card rate_\w+: h100x8 at 5 USD a node-hour and 1.5 USD a GPU-hour, from 2025-06-01 00:00 UTC to further notice\.\n$/,
    );
    const listed = await tollgate('rate-cards', 'list', '--profile', 'h100x8');
    expect(listed.stdout).toMatch(/^ID\s+PROFILE\s+CURRENCY\s+NODE-HOUR\s+GPU-HOUR\s+FROM\s+TO\n/);
    // The first card now ends where the second starts.
    expect(listed.stdout).toMatch(
      new RegExp(`${added.json.id}\\s+h100x8\\s+USD\\s+4\\s+1.25\\s+2025-01-01 00:00 UTC\\s+2025-06-01 00:00 UTC`),
    );

    const bad = await tollgate(
      'rate-cards',
      'add',
      '--profile',
      'h100x8',
      '--currency',
      'usd',
      '--node-hour',
      '-1',
      '--gpu-hour',
      '1',
      '--from',
      'soon',
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(
      /^error: Invalid request body\. \(invalid_request\)\n {2}currency: .+\n {2}node_hour_price: .+\n {2}effective_from: .+\n$/,
    );
    const missing = await tollgate('rate-cards', 'add', '--profile', 'h100x8');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^error: --currency is required\nusage: tollgate rate-cards add /);

    const extra = await tollgate(
      'rate-cards',
      'add',
      '--profile',
      'h100x8',
      '--currency',
      'EUR',
      '--node-hour',
      '1',
      '--gpu-hour',
      '1',
      '--from',
      '2030-01-01',
      '--to',
      '2030-02-01',
      '--json',
    );
    expect(extra.code, extra.stderr).toBe(1); // overlaps the open-ended card
    expect(extra.stderr).toMatch(/\(conflict\)\n {2}effective_from: Overlaps rate card rate_/);
    expect((await tollgate('rate-cards', 'delete', added.json.id)).stdout).toBe(
      `Deleted rate card ${added.json.id}.\n`,
    );
    expect((await tollgate('rate-cards', 'delete', added.json.id)).code).toBe(1);
  });

  it('sets, lists and deletes conversion rates', async () => {
    expect(
      (
        await tollgate(
          'conversion-rates',
          'set',
          '--base',
          'USD',
          '--quote',
          'EUR',
          '--date',
          '2025-06-01',
          '--rate',
          '0.9',
        )
      ).stdout,
    ).toBe('1 USD = 0.9 EUR from 2025-06-01.\n');
    expect(
      (
        await tollgate(
          'conversion-rates',
          'set',
          '--base',
          'USD',
          '--quote',
          'EUR',
          '--date',
          '2025-06-01',
          '--rate',
          '0.91',
          '--json',
        )
      ).json,
    ).toMatchObject({ rate: '0.91' });
    expect((await tollgate('conversion-rates', 'list')).stdout).toMatch(
      /^BASE\s+QUOTE\s+FROM DATE\s+RATE\nUSD\s+EUR\s+2025-06-01\s+0.91\n$/,
    );
    expect(
      (await tollgate('conversion-rates', 'set', '--base', 'USD', '--quote', 'EUR', '--date', 'June', '--rate', '1'))
        .code,
    ).toBe(2);
    await tollgate(
      'conversion-rates',
      'set',
      '--base',
      'USD',
      '--quote',
      'GBP',
      '--date',
      '2025-06-01',
      '--rate',
      '0.8',
    );
    expect(
      (await tollgate('conversion-rates', 'delete', '--base', 'USD', '--quote', 'GBP', '--date', '2025-06-01')).code,
    ).toBe(0);
    expect((await tollgate('conversion-rates', 'list', '--quote', 'GBP', '--json')).json.data).toEqual([]);
  });

  it("reports every organization's costs for a month", async () => {
    // 12:00 to midnight at the deleted card's price is now unrated (12 h); midnight to 12:30 (12.5
    // h) at 5 + 8 × 1.5 = 17 USD an hour = 212.50 USD.
    const june = await tollgate('costs', 'report', '--month', '2025-06', '--json');
    expectSumsAddUp(june.json);
    expect(june.json.totals).toMatchObject({
      amounts: [{ currency: 'USD', amount: '212.50' }],
      node_seconds: 45_000,
      gpu_seconds: 360_000,
    });
    const may = await tollgate('costs', 'report', '--from', '2025-05-01', '--to', '2025-06-01');
    expect(may.stdout).toMatch(
      /^Costs from 2025-05-01T00:00:00Z to 2025-06-01T00:00:00Z \(amounts rounded half-even\):\nORGANIZATION\s+CLUSTER\s+PROFILE\s+NODE-HOURS\s+GPU-HOURS\s+UNRATED\s+AMOUNT\n/,
    );
    expect(may.stdout).toMatch(/Acme\s+train\s+h100x8\s+12.000000\s+96.000000\s+12.000000\s+unrated\n/);
    expect(may.stdout).toContain('Total: -; 12.000000 node-hours, 96.000000 GPU-hours, 12.000000 unrated hours.');
    expect((await tollgate('costs', 'report', '--month', 'June')).stderr).toMatch(
      /month: Must be a month as YYYY-MM\./,
    );
  });
});
