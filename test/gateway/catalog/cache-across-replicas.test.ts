import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import { adminCallTo, catalogSeenBy, type GatewayProcess, startGatewayProcess } from '../../helpers/processes.js';
import {
  createTestDatabase,
  deleteRedisPrefix,
  postgresAndRedisOrSkip,
  redisUrl,
  uniqueRedisPrefix,
} from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';

/**
 * Each replica keeps keys, models, prices and projects in memory
 * (`catalog/request-path-cache.ts`). A change made through one replica is seen
 * by that replica at once and by the others within TOLLGATE_CATALOG_POLL_MS
 * plus one read: two gateway processes on one PostgreSQL database.
 */

const ready = await postgresAndRedisOrSkip('the admission cache tests across replicas');

const ADMIN_TOKEN = 'cache-operator-token-0123456789';
const POLL_MS = 100;
/**
 * The stated bound: one poll interval plus one read; the test allows the read 400 ms on a loaded
 * machine.
 */
const BOUND_MS = POLL_MS + 400;

describe.skipIf(!ready)('admission cache across gateway replicas', () => {
  let sim: RunningSimulator;
  let tmp: string;
  let database: { url: string; drop(): Promise<void> } | undefined;
  const prefix = uniqueRedisPrefix();
  const gateways: GatewayProcess[] = [];
  let a: GatewayProcess;
  let b: GatewayProcess;

  beforeAll(async () => {
    sim = await startSimulator({ models: [{ name: 'sim-chat', task: 'chat' }] });
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-cache-'));
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: sim.url }] }),
    );
    database = await createTestDatabase();
    const env = (name: string) => ({
      DATABASE_URL: database!.url,
      REDIS_URL: redisUrl,
      TOLLGATE_REDIS_PREFIX: prefix,
      TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json'),
      TOLLGATE_DATA_DIR: path.join(tmp, name),
      TOLLGATE_CATALOG_POLL_MS: String(POLL_MS),
    });
    a = await startGatewayProcess('gateway-a', env('a'));
    gateways.push(a);
    b = await startGatewayProcess('gateway-b', env('b'));
    gateways.push(b);
    await adminCall('POST', '/models', {
      id: 'sim-chat',
      display_name: 'Sim Chat',
      hf_repo_id: 'tollgate-test/Sim-Chat-1B',
      task_type: 'chat',
      context_length: 8192,
    });
    await adminCall('PUT', '/prices/sim-chat', { input_per_million: '0.15', output_per_million: '0.60' });
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled(gateways.map((g) => g.child.stop()));
    await sim?.close().catch(() => {});
    await deleteRedisPrefix(prefix).catch(() => {});
    await database
      ?.drop()
      .catch((error: unknown) => console.warn(`could not drop the test database: ${String(error)}`));
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }, 60_000);

  const adminCall = <T = Record<string, unknown>>(method: string, route: string, body?: unknown) =>
    adminCallTo<T>(a.url, ADMIN_TOKEN, method, route, body);

  async function createKey(): Promise<{ id: string; secret: string }> {
    const org = await adminCall<{ id: string }>('POST', '/orgs', { name: 'cache test org' });
    await adminCall('POST', `/orgs/${org.id}/wallet/topups`, { amount: '100' });
    return adminCall<{ id: string; secret: string }>('POST', `/orgs/${org.id}/keys`, { name: 'cache test key' });
  }

  const chat = (gateway: GatewayProcess, secret: string, model = 'sim-chat') =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }),
      signal: AbortSignal.timeout(20_000),
    });

  /**
   * Sends requests to `gateway` until one answers `status`; the time from `since` to that answer,
   * in ms.
   */
  function msUntil(
    gateway: GatewayProcess,
    secret: string,
    status: number,
    since: number,
    model?: string,
  ): Promise<number> {
    let last = 0;
    return until(
      `${gateway.url} answers ${status}`,
      async () => {
        const response = await chat(gateway, secret, model);
        await response.arrayBuffer();
        last = response.status;
        return response.status === status && performance.now() - since;
      },
      { interval: 5, detail: () => `last answer: ${last}` },
    );
  }

  it('refuses a key revoked on another replica within the bound, and at once on the replica that revoked it', async () => {
    const key = await createKey();
    // Both replicas now hold the key in their caches.
    for (const gateway of [a, b]) expect((await chat(gateway, key.secret)).status).toBe(200);

    const revokedAt = performance.now();
    await adminCall('POST', `/keys/${key.id}/revoke`);
    const onA = await chat(a, key.secret);
    expect(onA.status).toBe(401);
    expect(((await onA.json()) as { error: { message: string } }).error.message).toMatch(/revoked/);
    const onB = await msUntil(b, key.secret, 401, revokedAt);
    console.log(`revoked key refused on the other replica after ${onB.toFixed(1)} ms (poll every ${POLL_MS} ms)`);
    expect(onB).toBeLessThan(BOUND_MS);
  }, 60_000);

  it('sees a model disabled and enabled again on another replica within the bound', async () => {
    const key = await createKey();
    expect((await chat(b, key.secret)).status).toBe(200);
    const disabledAt = performance.now();
    await adminCall('PATCH', '/models/sim-chat', { enabled: false });
    expect(await msUntil(b, key.secret, 400, disabledAt)).toBeLessThan(BOUND_MS);
    const enabledAt = performance.now();
    await adminCall('PATCH', '/models/sim-chat', { enabled: true });
    expect(await msUntil(b, key.secret, 200, enabledAt)).toBeLessThan(BOUND_MS);
  }, 60_000);

  /**
   * Waits until each request's usage record (named by its x-request-id) is in the history: its
   * charge is written by then.
   */
  async function recorded(secret: string, requestIds: string[]): Promise<void> {
    await until(
      `requests ${requestIds.join(', ')} are recorded`,
      async () => {
        const page = await fetch(`${b.url}/v1/usage/requests?limit=100`, {
          headers: { authorization: `Bearer ${secret}` },
        });
        const ids = new Set(((await page.json()) as { data: Array<{ id: string }> }).data.map((record) => record.id));
        return requestIds.every((id) => ids.has(id));
      },
      { timeout: 15_000 },
    );
  }

  it('bills at a new price on another replica once it is seen', async () => {
    const key = await createKey();
    const priced = await chat(b, key.secret);
    expect(priced.status).toBe(200);
    await recorded(key.secret, [priced.headers.get('x-request-id')!]);
    // A price of zero makes the new price visible in the wallet: nothing more is charged once B
    // sees it.
    await adminCall('PUT', '/prices/sim-chat', { input_per_million: '0', output_per_million: '0' });
    await catalogSeenBy(b, a, ADMIN_TOKEN);
    const keyRow = await adminCall<{ org_id: string }>('GET', `/keys/${key.id}`);
    const before = await adminCall<{ balance_nanos: string }>('GET', `/orgs/${keyRow.org_id}/wallet`);
    expect(before.balance_nanos).toMatch(/^\d+$/);
    const free = await chat(b, key.secret);
    expect(free.status).toBe(200);
    // Its charge is written once its usage record is: a late charge would show in the balance.
    await recorded(key.secret, [free.headers.get('x-request-id')!]);
    const after = await adminCall<{ balance_nanos: string }>('GET', `/orgs/${keyRow.org_id}/wallet`);
    expect(after.balance_nanos).toBe(before.balance_nanos);
    await adminCall('PUT', '/prices/sim-chat', { input_per_million: '0.15', output_per_million: '0.60' });
  }, 60_000);
});
