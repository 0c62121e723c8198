import { parse } from 'csv-parse/sync';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { monthWindow } from '../../../src/platform/costs/window.js';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { apiAs, orgWithUsers, type TestUser } from '../../surfaces/api/harness.js';
import { expectSumsAddUp } from './sums.js';

const stores = await availableStores();
const OPERATOR = 'test-operator-token-0123456789';

/**
 * One February (2025) of three organizations, metered from allocations whose
 * times the test sets (to the microsecond, truncated to the second by the
 * report), priced by rate cards in USD, JPY and KWD, converted to EUR and JPY
 * where a rate exists. Every expected amount below was worked out by hand
 * (and checked with Python's decimal module, half-even).
 */
describe.each(stores)('cost reports (%s)', (store) => {
  let gateway: TestGateway;
  let a: { orgId: string; users: TestUser[] };
  let b: { orgId: string; users: TestUser[] };
  let c: { orgId: string; users: TestUser[] };
  let root: { orgId: string; users: TestUser[] };
  const cluster: Record<string, string> = {};

  const operator = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${gateway.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null, headers: response.headers };
  };
  /**
   * Sets a cluster's allocations to these instants (ISO strings, microseconds allowed; `null`:
   * still running).
   */
  const allocate = (clusterId: string, from: string, to: string | null) =>
    gateway.services.db.execute(
      sql`update node_allocations set allocated_at = ${from}::timestamptz, released_at = ${to}::timestamptz where cluster_id = ${clusterId}`,
    );

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10' });
    a = await orgWithUsers(gateway, ['owner', 'admin', 'member']);
    b = await orgWithUsers(gateway, ['owner', 'member']);
    c = await orgWithUsers(gateway, ['owner']);
    root = await orgWithUsers(gateway, ['member'], { platformAdmin: true });
    const profiles = [
      { name: 'p8', gpus_per_node: 8, nodes: 3 },
      { name: 'p1', gpus_per_node: 1, nodes: 1 },
      { name: 'pk', gpus_per_node: 0, nodes: 1 },
      { name: 'px', gpus_per_node: 2, nodes: 1 },
    ];
    for (const profile of profiles) {
      expect(
        (await operator('POST', '/profiles', { name: profile.name, gpus_per_node: profile.gpus_per_node })).status,
      ).toBe(201);
      for (let i = 0; i < profile.nodes; i++)
        expect(
          (await operator('POST', '/nodes', { profile: profile.name, address: `${profile.name}-${i}.internal` }))
            .status,
        ).toBe(201);
    }
    // Rate cards: p8 in USD with a price change on 15 February at noon (the new open-ended card
    // ends the old one), p1 in JPY, pk in KWD; px has none (unrated).
    const cards = [
      { profile: 'p8', currency: 'USD', node_hour_price: '2.50', gpu_hour_price: '0.40', effective_from: '2025-01-01' },
      {
        profile: 'p8',
        currency: 'USD',
        node_hour_price: '3',
        gpu_hour_price: '0.5',
        effective_from: '2025-02-15T12:00:00Z',
      },
      {
        profile: 'p1',
        currency: 'JPY',
        node_hour_price: '155.5',
        gpu_hour_price: '20.25',
        effective_from: '2025-01-01',
      },
      {
        profile: 'pk',
        currency: 'KWD',
        node_hour_price: '0.1235',
        gpu_hour_price: '0',
        effective_from: '2025-01-01',
        effective_to: '2026-01-01',
      },
    ];
    for (const card of cards) expect((await operator('POST', '/rate-cards', card)).status).toBe(201);
    // USD→EUR changes on the 18th; JPY→EUR and USD→JPY exist; KWD→EUR does not.
    for (const [base, quote, date, rate] of [
      ['USD', 'EUR', '2025-01-01', '0.90'],
      ['USD', 'EUR', '2025-02-01', '0.92'],
      ['USD', 'EUR', '2025-02-18', '0.95'],
      ['USD', 'EUR', '2025-03-01', '0.5'],
      ['JPY', 'EUR', '2025-02-01', '0.0061'],
      ['USD', 'JPY', '2025-02-01', '151.234'],
    ]) {
      expect((await operator('PUT', `/conversion-rates/${base}/${quote}/${date}`, { rate })).status).toBe(201);
    }

    const make = async (owner: TestUser, name: string, profile: string, nodes: number) => {
      const created = await apiAs(gateway, owner.key)('POST', '/clusters', {
        name,
        profile,
        nodes,
        public_domain: `${name}.example.com`,
      });
      expect(created.status).toBe(201);
      cluster[name] = created.body.id;
      return created.body.id as string;
    };
    // a-train: two p8 nodes from 31 January 22:00 across the month's end, past the price change,
    // deleted on 20 February.
    await make(a.users[0]!, 'a-train', 'p8', 2);
    expect((await apiAs(gateway, a.users[0]!.key)('DELETE', `/clusters/${cluster['a-train']}`)).status).toBe(204);
    await allocate(cluster['a-train']!, '2025-01-31T22:00:00.400123Z', '2025-02-20T10:00:07.900001Z');
    await make(a.users[0]!, 'a-jp', 'p1', 1);
    await apiAs(gateway, a.users[0]!.key)('DELETE', `/clusters/${cluster['a-jp']}`);
    await allocate(cluster['a-jp']!, '2025-02-03T00:00:00Z', '2025-02-05T00:20:34Z');
    await make(a.users[0]!, 'a-kw', 'pk', 1);
    await apiAs(gateway, a.users[0]!.key)('DELETE', `/clusters/${cluster['a-kw']}`);
    await allocate(cluster['a-kw']!, '2025-02-10T00:00:00Z', '2025-02-11T06:00:30Z');
    // a-x: unrated, still running.
    await make(a.users[0]!, 'a-x', 'px', 1);
    await allocate(cluster['a-x']!, '2025-02-27T00:00:00Z', null);
    await make(b.users[0]!, 'b-one', 'p8', 1);
    await apiAs(gateway, b.users[0]!.key)('DELETE', `/clusters/${cluster['b-one']}`);
    await allocate(cluster['b-one']!, '2025-02-01T00:00:00Z', '2025-02-02T00:00:00Z');
    await make(c.users[0]!, 'c-one', 'p8', 1);
    await apiAs(gateway, c.users[0]!.key)('DELETE', `/clusters/${cluster['c-one']}`);
    await allocate(cluster['c-one']!, '2025-02-16T00:00:00Z', '2025-02-16T01:00:01Z');
  });
  afterAll(() => gateway?.close());

  it('sets billing currencies for owners and admins only, with checked codes', async () => {
    const asOwner = apiAs(gateway, a.users[0]!.key);
    const asAdmin = apiAs(gateway, a.users[1]!.key);
    const asMember = apiAs(gateway, a.users[2]!.key);
    expect((await asMember('GET', `/orgs/${a.orgId}/billing-currency`)).body).toEqual({
      org_id: a.orgId,
      currency: null,
    });
    const refused = await asMember('PATCH', `/orgs/${a.orgId}/billing-currency`, { currency: 'EUR' });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');
    expect((await asOwner('PATCH', `/orgs/${a.orgId}/billing-currency`, { currency: 'GBP' })).body).toEqual({
      org_id: a.orgId,
      currency: 'GBP',
    });
    expect((await asAdmin('PATCH', `/orgs/${a.orgId}/billing-currency`, { currency: 'EUR' })).body).toEqual({
      org_id: a.orgId,
      currency: 'EUR',
    });
    expect((await asMember('GET', `/orgs/${a.orgId}/billing-currency`)).body.currency).toBe('EUR');
    // Another organization's owner cannot see or set it: 404, as if it did not exist.
    expect(
      (await apiAs(gateway, b.users[0]!.key)('PATCH', `/orgs/${a.orgId}/billing-currency`, { currency: 'USD' })).status,
    ).toBe(404);
    expect((await apiAs(gateway, b.users[0]!.key)('GET', `/orgs/${a.orgId}/billing-currency`)).status).toBe(404);
    for (const currency of ['eur', 'EURO', 'XYZ', 12]) {
      const bad = await asOwner('PATCH', `/orgs/${a.orgId}/billing-currency`, { currency });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatchObject({ code: 'VALIDATION_ERROR', details: [{ field: 'currency' }] });
    }
    expect((await asOwner('PATCH', `/orgs/${a.orgId}/billing-currency`, {})).body.error.details).toEqual([
      { field: 'currency', message: 'Required.' },
    ]);
    // Cleared, then set: a platform admin may set any organization's.
    expect(
      (await apiAs(gateway, b.users[0]!.key)('PATCH', `/orgs/${b.orgId}/billing-currency`, { currency: 'KWD' })).body
        .currency,
    ).toBe('KWD');
    expect(
      (await apiAs(gateway, b.users[0]!.key)('PATCH', `/orgs/${b.orgId}/billing-currency`, { currency: null })).body,
    ).toEqual({ org_id: b.orgId, currency: null });
    expect(
      (await apiAs(gateway, root.users[0]!.key)('PATCH', `/orgs/${c.orgId}/billing-currency`, { currency: 'JPY' })).body
        .currency,
    ).toBe('JPY');
    expect(
      (await apiAs(gateway, b.users[0]!.key)('PATCH', '/orgs/org_nope/billing-currency', { currency: 'EUR' })).status,
    ).toBe(404);
  });

  it("reports an organization's month: split at the month's end and the price change, deleted and unrated clusters, three currencies, one not converted", async () => {
    const { status, body: report } = await apiAs(gateway, a.users[2]!.key)('GET', '/billing/costs?month=2025-02');
    expect(status).toBe(200);
    expect(report.window).toEqual({ from: '2025-02-01T00:00:00Z', to: '2025-03-01T00:00:00Z', month: '2025-02' });
    expect(report.rounding).toBe('half-even');
    expect(report.organizations).toHaveLength(1);
    const org = report.organizations[0];
    expect(org).toMatchObject({ org_id: a.orgId, billing_currency: 'EUR' });
    const lines = org.line_items.map((item: any) => [
      item.cluster_name,
      item.cluster_state,
      item.node_seconds,
      item.gpu_seconds,
      item.unrated_seconds,
      item.amount,
      item.currency,
      item.native_amount,
      item.native_currency,
      item.conversion,
      item.conversion_skipped,
    ]);
    expect(lines).toEqual([
      // 48 h 20 min 34 s, 1 node: 174,034 s at 175.75 JPY an hour = 8496.24… → 8496 JPY; × 0.0061 =
      // 51.827… → 51.83 EUR.
      [
        'a-jp',
        'deleted',
        174_034,
        174_034,
        0,
        '51.83',
        'EUR',
        '8496',
        'JPY',
        { rate: '0.0061', effective_on: '2025-02-01' },
        false,
      ],
      // 30 h 30 s at 0.1235 KWD an hour = 3.706029… → 3.706 KWD; no KWD→EUR rate: kept in KWD,
      // flagged.
      ['a-kw', 'deleted', 108_030, 0, 0, '3.706', 'KWD', '3.706', 'KWD', null, true],
      // 1 Feb 00:00 to 15 Feb 12:00, 2 nodes: 696 node-hours at 5.70 USD = 3967.20 USD; × 0.92 (the
      // rate of 1 Feb) = 3649.824 → 3649.82 EUR.
      [
        'a-train',
        'deleted',
        2_505_600,
        20_044_800,
        0,
        '3649.82',
        'EUR',
        '3967.20',
        'USD',
        { rate: '0.92', effective_on: '2025-02-01' },
        false,
      ],
      // 15 Feb 12:00 to 20 Feb 10:00:07 (the .9 s truncated), 2 nodes: 849,614 node-seconds at 7.00
      // USD an hour = 1652.0272… → 1652.03 USD; × 0.95 (rate of the 18th) → 1569.43 EUR.
      [
        'a-train',
        'deleted',
        849_614,
        6_796_912,
        0,
        '1569.43',
        'EUR',
        '1652.03',
        'USD',
        { rate: '0.95', effective_on: '2025-02-18' },
        false,
      ],
      // Unrated: two days to the window's end, no amount.
      ['a-x', 'running', 172_800, 345_600, 172_800, null, null, null, null, null, false],
    ]);
    const [jp, kw, train1, train2, unrated] = org.line_items;
    expect(jp).toMatchObject({
      profile: 'p1',
      gpus_per_node: 1,
      node_hours: '48.342778',
      rate_card: { currency: 'JPY', node_hour_price: '155.5', gpu_hour_price: '20.25' },
    });
    expect(kw).toMatchObject({
      node_hours: '30.008333',
      rate_card: { currency: 'KWD', node_hour_price: '0.1235', gpu_hour_price: '0' },
    });
    expect(train1).toMatchObject({
      charge_period_start: '2025-02-01T00:00:00Z',
      charge_period_end: '2025-02-15T12:00:00Z',
      node_hours: '696.000000',
      gpu_hours: '5568.000000',
      rate_card: { node_hour_price: '2.5', gpu_hour_price: '0.4' },
    });
    expect(train2).toMatchObject({
      charge_period_start: '2025-02-15T12:00:00Z',
      charge_period_end: '2025-02-20T10:00:07Z',
      rate_card: { node_hour_price: '3', gpu_hour_price: '0.5' },
    });
    expect(train1.rate_card.id).not.toBe(train2.rate_card.id);
    expect(unrated).toMatchObject({
      rate_card: null,
      unrated_hours: '48.000000',
      charge_period_end: '2025-03-01T00:00:00Z',
    });
    // EUR: 51.83 + 3649.82 + 1569.43; the KWD line stays in KWD.
    expect(org.totals).toEqual({
      amounts: [
        { currency: 'EUR', amount: '5271.08' },
        { currency: 'KWD', amount: '3.706' },
      ],
      node_seconds: 3_810_078,
      node_hours: '1058.355000',
      gpu_seconds: 27_361_346,
      gpu_hours: '7600.373889',
      unrated_seconds: 172_800,
      unrated_hours: '48.000000',
    });
    expect(report.totals).toEqual(org.totals);
    expectSumsAddUp(report);
  });

  it('the cluster across the month boundary is in January too, split to the second', async () => {
    const { body: january } = await apiAs(gateway, a.users[0]!.key)(
      'GET',
      '/billing/costs?from=2025-01-01&to=2025-02-01',
    );
    expect(january.window).toEqual({ from: '2025-01-01T00:00:00Z', to: '2025-02-01T00:00:00Z', month: null });
    // 22:00:00 (the .400123 s truncated) to midnight, 2 nodes: 4 node-hours at 5.70 USD = 22.80
    // USD; × 0.90 (the rate of 1 January) = 20.52 EUR.
    expect(january.organizations[0].line_items).toEqual([
      expect.objectContaining({
        cluster_name: 'a-train',
        node_seconds: 14_400,
        gpu_seconds: 115_200,
        charge_period_start: '2025-01-31T22:00:00Z',
        charge_period_end: '2025-02-01T00:00:00Z',
        amount: '20.52',
        native_amount: '22.80',
        currency: 'EUR',
      }),
    ]);
    // Both months together hold exactly the whole allocation: 31 Jan 22:00:00 to 20 Feb 10:00:07,
    // times 2 nodes.
    const { body: both } = await apiAs(gateway, a.users[0]!.key)(
      'GET',
      '/billing/costs?from=2025-01-01T00:00:00Z&to=2025-03-01T00:00:00%2B00:00',
    );
    const trainSeconds = both.organizations[0].line_items
      .filter((item: any) => item.cluster_name === 'a-train')
      .reduce((sum: number, item: any) => sum + item.node_seconds, 0);
    expect(trainSeconds).toBe((2 * (Date.parse('2025-02-20T10:00:07Z') - Date.parse('2025-01-31T22:00:00Z'))) / 1000);
    expect(trainSeconds).toBe(14_400 + 2_505_600 + 849_614);
    expectSumsAddUp(both);
  });

  it('keeps organizations apart; platform admins see every organization with usage, and the grand total per currency', async () => {
    const { body: ofB } = await apiAs(gateway, b.users[1]!.key)('GET', '/billing/costs?month=2025-02');
    expect(ofB.organizations.map((org: any) => org.org_id)).toEqual([b.orgId]);
    // No billing currency: the native amount. 24 h at 5.70 USD.
    expect(ofB.organizations[0].line_items).toEqual([
      expect.objectContaining({
        cluster_name: 'b-one',
        amount: '136.80',
        currency: 'USD',
        native_amount: '136.80',
        conversion: null,
        conversion_skipped: false,
      }),
    ]);
    expect(ofB.totals.amounts).toEqual([{ currency: 'USD', amount: '136.80' }]);
    // An organization without usage still sees itself, empty.
    const { body: empty } = await apiAs(gateway, b.users[0]!.key)('GET', '/billing/costs?month=2024-06');
    expect(empty.organizations).toEqual([
      expect.objectContaining({
        org_id: b.orgId,
        line_items: [],
        totals: expect.objectContaining({ amounts: [], node_seconds: 0, node_hours: '0.000000' }),
      }),
    ]);

    const { body: all } = await apiAs(gateway, root.users[0]!.key)('GET', '/billing/costs?month=2025-02');
    expect(all.organizations.map((org: any) => org.org_id).sort()).toEqual([a.orgId, b.orgId, c.orgId].sort());
    // c-one: 3601 s at 7.00 USD an hour = 7.0019… → 7.00 USD; in JPY at 151.234: 1058.932… → 1059
    // JPY (no minor units).
    const ofC = all.organizations.find((org: any) => org.org_id === c.orgId);
    expect(ofC.line_items).toEqual([
      expect.objectContaining({
        amount: '1059',
        currency: 'JPY',
        native_amount: '7.00',
        native_currency: 'USD',
        conversion: { rate: '151.234', effective_on: '2025-02-01' },
      }),
    ]);
    expect(all.totals.amounts).toEqual([
      { currency: 'EUR', amount: '5271.08' },
      { currency: 'JPY', amount: '1059' },
      { currency: 'KWD', amount: '3.706' },
      { currency: 'USD', amount: '136.80' },
    ]);
    expectSumsAddUp(all);
    // The operator sees the same through /admin/v1, and one organization on request.
    expect((await operator('GET', '/costs?month=2025-02')).body.totals).toEqual(all.totals);
    expect(
      (await operator('GET', `/costs?month=2025-02&org_id=${b.orgId}`)).body.organizations.map(
        (org: any) => org.org_id,
      ),
    ).toEqual([b.orgId]);
  });

  it('gives the same line items as CSV, with FOCUS column names and a file name', async () => {
    const response = await fetch(`${gateway.url}/v1/billing/costs.csv?month=2025-02`, {
      headers: { authorization: `Bearer ${root.users[0]!.key}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(response.headers.get('content-disposition')).toBe(
      'attachment; filename="tollgate-costs_20250201T000000Z_20250301T000000Z.csv"',
    );
    const text = await response.text();
    expect(text).toContain('\r\n');
    const rows: Record<string, string>[] = parse(text, { columns: true });
    const { body: json } = await apiAs(gateway, root.users[0]!.key)('GET', '/billing/costs?month=2025-02');
    const expected = json.organizations.flatMap((org: any) =>
      org.line_items.map((item: any) => ({
        BillingPeriodStart: json.window.from,
        BillingPeriodEnd: json.window.to,
        ChargePeriodStart: item.charge_period_start,
        ChargePeriodEnd: item.charge_period_end,
        BilledCost: item.amount ?? '',
        BillingCurrency: item.currency ?? '',
        SubAccountId: org.org_id,
        SubAccountName: org.org_name,
        ResourceId: item.cluster_id,
        ResourceName: item.cluster_name,
        SkuId: item.profile,
        SkuPriceId: item.rate_card?.id ?? '',
        ConsumedQuantity: item.node_hours,
        ConsumedUnit: 'Node-Hours',
        x_ClusterState: item.cluster_state,
        x_GpusPerNode: String(item.gpus_per_node),
        x_NodeSeconds: String(item.node_seconds),
        x_GpuSeconds: String(item.gpu_seconds),
        x_GpuHours: item.gpu_hours,
        x_UnratedSeconds: String(item.unrated_seconds),
        x_UnratedHours: item.unrated_hours,
        x_NodeHourPrice: item.rate_card?.node_hour_price ?? '',
        x_GpuHourPrice: item.rate_card?.gpu_hour_price ?? '',
        x_NativeCost: item.native_amount ?? '',
        x_NativeCurrency: item.native_currency ?? '',
        x_ConversionRate: item.conversion?.rate ?? '',
        x_ConversionRateDate: item.conversion?.effective_on ?? '',
        x_ConversionSkipped: String(item.conversion_skipped),
      })),
    );
    expect(rows).toEqual(expected);
    expect(rows).toHaveLength(7);
    // The CSV's amounts add up to the JSON's grand total, per currency.
    const sums = new Map<string, bigint>();
    for (const row of rows)
      if (row.BilledCost)
        sums.set(
          row.BillingCurrency!,
          (sums.get(row.BillingCurrency!) ?? 0n) + BigInt(row.BilledCost.replace('.', '')),
        );
    expect(Object.fromEntries([...sums].map(([currency, minor]) => [currency, minor.toString()]))).toEqual({
      EUR: '527108',
      JPY: '1059',
      KWD: '3706',
      USD: '13680',
    });
    // An organization's user gets only theirs.
    const ofB = await fetch(`${gateway.url}/api/v1/billing/costs.csv?month=2025-02`, {
      headers: { authorization: `Bearer ${b.users[1]!.key}` },
    });
    expect(parse<Record<string, string>>(await ofB.text(), { columns: true }).map((row) => row.SubAccountId)).toEqual([
      b.orgId,
    ]);
  });

  it('meters running clusters up to the clock it is given', async () => {
    const march = monthWindow('2025-03');
    const at = async (now: string) => {
      const report = await gateway.services.costs.report({ orgId: a.orgId }, march, new Date(now));
      expectSumsAddUp(report);
      return report.organizations[0]!.line_items;
    };
    expect(await at('2025-02-20T00:00:00Z')).toEqual([]);
    expect(await at('2025-03-01T00:00:59.999Z')).toEqual([
      expect.objectContaining({ cluster_name: 'a-x', node_seconds: 59, charge_period_end: '2025-03-01T00:00:59Z' }),
    ]);
    expect(await at('2025-03-02T12:00:00Z')).toEqual([
      expect.objectContaining({ cluster_name: 'a-x', node_seconds: 129_600, unrated_hours: '36.000000' }),
    ]);
    // After the window, a running cluster counts to the window's end.
    expect(await at('2026-01-01T00:00:00Z')).toEqual([
      expect.objectContaining({ node_seconds: 31 * 86_400, charge_period_end: '2025-04-01T00:00:00Z' }),
    ]);
  });

  it('answers the current month by default, and names every bad window parameter', async () => {
    const api = apiAs(gateway, a.users[0]!.key);
    const { body } = await api('GET', '/billing/costs');
    expect(body.window.month).toBe(new Date().toISOString().slice(0, 7));
    const cases: [string, string[]][] = [
      ['month=2025-13', ['month']],
      ['month=2025-02&from=2025-02-01', ['month']],
      ['from=2025-02-01', ['to']],
      ['from=yesterday&to=2025-02-01', ['from']],
      ['from=2025-02-01T00:00:00&to=2025-03-01', ['from']],
      ['from=2025-02-01T00:00:00.5Z&to=2025-03-01', ['from']],
      ['from=2025-03-01&to=2025-02-01', ['to']],
      ['from=2024-01-01&to=2025-02-01', ['to']],
    ];
    for (const [query, fields] of cases) {
      const bad = await api('GET', `/billing/costs?${query}`);
      expect(bad.status, query).toBe(400);
      expect(bad.body.error.code).toBe('VALIDATION_ERROR');
      expect(
        bad.body.error.details.map((d: { field: string }) => d.field),
        query,
      ).toEqual(fields);
    }
    expect((await fetch(`${gateway.url}/v1/billing/costs`)).status).toBe(401);
  });

  it('refuses years before 1970 on every window parameter, never reading 0001-01 as 1901', async () => {
    const api = apiAs(gateway, a.users[0]!.key);
    const cases: [string, string[]][] = [
      ['month=0001-01', ['month']],
      ['month=0099-12', ['month']],
      ['month=1969-12', ['month']],
      ['from=0001-01-01&to=0001-02-01', ['from', 'to']],
      ['from=1969-12-31T00:00:00Z&to=1970-01-02', ['from']],
    ];
    for (const [query, fields] of cases) {
      for (const answer of [
        await api('GET', `/billing/costs?${query}`),
        await api('GET', `/billing/costs.csv?${query}`),
        await operator('GET', `/costs?${query}`),
        await operator('GET', `/costs.csv?${query}`),
      ]) {
        expect(answer.status, query).toBe(400);
        expect(answer.body.error.code, query).toMatch(/^(VALIDATION_ERROR|invalid_request)$/);
        expect(answer.body.error.details, query).toEqual(
          fields.map((field) => ({ field, message: expect.stringContaining('1970') })),
        );
      }
    }
    // The epoch itself is a month like any other.
    const epoch = await api('GET', '/billing/costs?month=1970-01');
    expect(epoch.status).toBe(200);
    expect(epoch.body.window).toMatchObject({
      from: '1970-01-01T00:00:00Z',
      to: '1970-02-01T00:00:00Z',
      month: '1970-01',
    });
    const card = await operator('POST', '/rate-cards', {
      profile: 'p1',
      currency: 'USD',
      node_hour_price: '1',
      gpu_hour_price: '1',
      effective_from: '0001-01-01',
    });
    expect(card.status).toBe(400);
    expect(card.body.error.details).toEqual([{ field: 'effective_from', message: expect.stringContaining('1970') }]);
    // A conversion rate's date too, in every path that names one (0000 is no year PostgreSQL has).
    for (const date of ['0000-01-01', '0001-01-01', '1969-12-31']) {
      for (const answer of [
        await operator('PUT', `/conversion-rates/USD/EUR/${date}`, { rate: '0.9' }),
        await operator('DELETE', `/conversion-rates/USD/EUR/${date}`),
      ]) {
        expect(answer.status, date).toBe(400);
        expect(answer.body.error.details, date).toEqual([{ field: 'date', message: 'Must be in 1970 or later.' }]);
      }
    }
    expect(
      (await operator('GET', '/conversion-rates?base=USD&quote=EUR')).body.data.every(
        (rate: { effective_on: string }) => rate.effective_on >= '1970',
      ),
    ).toBe(true);
    const epochRate = await operator('PUT', '/conversion-rates/USD/EUR/1970-01-01', { rate: '0.9' });
    expect(epochRate.status).toBe(201);
    expect((await operator('DELETE', '/conversion-rates/USD/EUR/1970-01-01')).status).toBe(204);
  });

  it('lists currencies from the runtime, with symbols and minor units', async () => {
    const { body } = await apiAs(gateway, b.users[1]!.key)('GET', '/billing/currencies');
    expect(body.object).toBe('list');
    expect(body.data.length).toBeGreaterThan(100);
    const byCode = new Map(body.data.map((currency: any) => [currency.code, currency]));
    expect(byCode.get('USD')).toEqual({
      code: 'USD',
      name: 'US Dollar',
      symbol: '$',
      narrow_symbol: '$',
      minor_units: 2,
    });
    expect(byCode.get('JPY')).toMatchObject({ symbol: '¥', minor_units: 0 });
    expect(byCode.get('KWD')).toMatchObject({ name: 'Kuwaiti Dinar', minor_units: 3 });
    expect(byCode.get('EUR')).toMatchObject({ symbol: '€', minor_units: 2 });
  });

  it('leaves rate cards and conversion rates to operators', async () => {
    // A platform admin's key is not the operator token, and the generic API has no route to set
    // them.
    const key = root.users[0]!.key;
    for (const [method, path] of [
      ['POST', '/admin/v1/rate-cards'],
      ['PUT', '/admin/v1/conversion-rates/USD/EUR/2025-02-01'],
      ['GET', '/admin/v1/rate-cards'],
    ] as const) {
      expect(
        (
          await fetch(`${gateway.url}${path}`, {
            method,
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: method === 'GET' ? undefined : '{"rate":"1"}',
          })
        ).status,
      ).toBe(401);
    }
    expect(
      (await apiAs(gateway, key)('POST', '/billing/conversion-rates', { base: 'USD', quote: 'EUR', rate: '1' })).status,
    ).toBe(404);
    expect((await apiAs(gateway, key)('PUT', '/billing/rate-cards', {})).status).toBe(404);
    // The operator token is no user's credential either.
    expect(
      (await fetch(`${gateway.url}/v1/billing/costs`, { headers: { authorization: `Bearer ${OPERATOR}` } })).status,
    ).toBe(401);
  });

  it('checks rate cards and conversion rates as operators send them', async () => {
    const overlap = await operator('POST', '/rate-cards', {
      profile: 'p1',
      currency: 'JPY',
      node_hour_price: '1',
      gpu_hour_price: '1',
      effective_from: '2024-12-01',
      effective_to: '2025-01-02',
    });
    expect(overlap.status).toBe(409);
    expect(overlap.body.error.details).toEqual([
      { field: 'effective_from', message: expect.stringMatching(/^Overlaps rate card rate_/) },
    ]);
    const bad = await operator('POST', '/rate-cards', {
      profile: 'p1',
      currency: 'usd',
      node_hour_price: 2.5,
      gpu_hour_price: '0.1234567890123',
      effective_from: '2025-01-01T00:00:00.5Z',
      effective_to: '2024-01-01',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'currency',
      'effective_from',
      'gpu_hour_price',
      'node_hour_price',
    ]);
    expect(
      (
        await operator('POST', '/rate-cards', {
          profile: 'nope',
          currency: 'USD',
          node_hour_price: '1',
          gpu_hour_price: '1',
          effective_from: '2025-01-01',
        })
      ).body.error.details,
    ).toEqual([{ field: 'profile', message: 'Unknown profile nope.' }]);
    const listed = (await operator('GET', '/rate-cards?profile=p8')).body.data;
    expect(
      listed.map((card: any) => [card.node_hour_price, card.gpu_hour_price, card.effective_from, card.effective_to]),
    ).toEqual([
      ['2.5', '0.4', '2025-01-01T00:00:00.000Z', '2025-02-15T12:00:00.000Z'],
      ['3', '0.5', '2025-02-15T12:00:00.000Z', null],
    ]);
    // A rate replaced for the same date answers 200; its pair and date are checked.
    const replaced = await operator('PUT', '/conversion-rates/USD/EUR/2025-03-01', { rate: '0.51' });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ base: 'USD', quote: 'EUR', effective_on: '2025-03-01', rate: '0.51' });
    expect((await operator('PUT', '/conversion-rates/USD/USD/2025-03-01', { rate: '1' })).body.error.details).toEqual([
      { field: 'quote', message: 'Must differ from base.' },
    ]);
    expect((await operator('PUT', '/conversion-rates/USD/EUR/2025-02-30', { rate: '1' })).body.error.details).toEqual([
      { field: 'date', message: 'Must be a date as YYYY-MM-DD.' },
    ]);
    expect((await operator('PUT', '/conversion-rates/USD/EUR/2025-03-02', { rate: '0' })).body.error.details).toEqual([
      { field: 'rate', message: 'Must be greater than 0.' },
    ]);
    expect(
      (await operator('GET', '/conversion-rates?base=USD&quote=EUR')).body.data.map((rate: any) => rate.effective_on),
    ).toEqual(['2025-01-01', '2025-02-01', '2025-02-18', '2025-03-01']);
    expect((await operator('DELETE', '/conversion-rates/USD/EUR/2025-03-01')).status).toBe(204);
    expect((await operator('DELETE', '/conversion-rates/USD/EUR/2025-03-01')).status).toBe(404);
    const extra = await operator('POST', '/rate-cards', {
      profile: 'px',
      currency: 'EUR',
      node_hour_price: '1',
      gpu_hour_price: '0',
      effective_from: '2030-01-01',
    });
    expect((await operator('DELETE', `/rate-cards/${extra.body.id}`)).status).toBe(204);
    expect((await operator('DELETE', `/rate-cards/${extra.body.id}`)).status).toBe(404);
  });
});
