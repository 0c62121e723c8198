import type { ApiErrorEnvelope } from '../../../src/surfaces/api/errors.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCallTo, type GatewayProcess, startGatewayProcess } from '../../helpers/processes.js';
import {
  createTestDatabase,
  deleteRedisPrefix,
  postgresAndRedisOrSkip,
  redisUrl,
  uniqueRedisPrefix,
} from '../../helpers/services.js';

/**
 * The generic API's hourly limits (1,000 requests per authenticated caller,
 * 100 per address without credentials) hold across two gateway processes
 * that share Redis: the counts are one.
 */

const ready = await postgresAndRedisOrSkip('the generic API rate-limit tests across replicas');

const ADMIN_TOKEN = 'api-limits-operator-token-0123456789';

describe.skipIf(!ready)('generic API rate limits across two replicas sharing Redis', () => {
  let tmp: string;
  let database: { url: string; drop(): Promise<void> } | undefined;
  const prefix = uniqueRedisPrefix();
  const gateways: GatewayProcess[] = [];

  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-api-limits-'));
    await writeFile(path.join(tmp, 'engines.json'), JSON.stringify({ engines: [] }));
    database = await createTestDatabase();
    for (const name of ['a', 'b']) {
      gateways.push(
        await startGatewayProcess(`gateway-${name}`, {
          DATABASE_URL: database.url,
          REDIS_URL: redisUrl,
          TOLLGATE_REDIS_PREFIX: prefix,
          TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
          TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json'),
          TOLLGATE_DATA_DIR: path.join(tmp, name),
          TOLLGATE_PASSWORD_COST: '10',
        }),
      );
    }
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled(gateways.map((g) => g.child.stop()));
    await deleteRedisPrefix(prefix).catch(() => {});
    await database
      ?.drop()
      .catch((error: unknown) => console.warn(`could not drop the test database: ${String(error)}`));
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }, 60_000);

  /**
   * `count` requests spread over both replicas, `parallel` at a time; answers their statuses and
   * the last response.
   */
  async function spread(count: number, path: string, headers: Record<string, string>): Promise<number[]> {
    const statuses: number[] = [];
    for (let sent = 0; sent < count; sent += 50) {
      const batch = Array.from({ length: Math.min(50, count - sent) }, (_, i) =>
        fetch(`${gateways[(sent + i) % 2]!.url}${path}`, { headers }).then(
          async (r) => (await r.arrayBuffer(), r.status),
        ),
      );
      statuses.push(...(await Promise.all(batch)));
    }
    return statuses;
  }

  it('the 1,001st request of a key in an hour gets 429 RATE_LIMITED, whichever replica it reaches', async () => {
    const org = await adminCallTo<{ id: string }>(gateways[0]!.url, ADMIN_TOKEN, 'POST', '/orgs', { name: 'limits' });
    await adminCallTo(gateways[0]!.url, ADMIN_TOKEN, 'POST', `/orgs/${org.id}/users`, {
      name: 'Owner',
      email: 'owner@limits.example.com',
      password: 'a-long-password',
      role: 'owner',
    });
    const { secret } = await adminCallTo<{ secret: string }>(
      gateways[0]!.url,
      ADMIN_TOKEN,
      'POST',
      `/orgs/${org.id}/keys`,
      { name: 'k' },
    );
    const headers = { authorization: `Bearer ${secret}` };
    const statuses = await spread(1_000, '/api/v1/me', headers);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1_000);
    for (const gateway of gateways) {
      const over = await fetch(`${gateway.url}/api/v1/users`, { headers });
      expect(over.status).toBe(429);
      expect(over.headers.get('x-ratelimit-limit')).toBe('1000');
      expect(over.headers.get('x-ratelimit-remaining')).toBe('0');
      const reset = Number(over.headers.get('x-ratelimit-reset'));
      expect(reset).toBeGreaterThan(3_000);
      expect(reset).toBeLessThanOrEqual(3_600);
      expect(over.headers.get('retry-after')).toBe(String(reset));
      expect(((await over.json()) as ApiErrorEnvelope).error).toEqual({
        code: 'RATE_LIMITED',
        message: expect.any(String),
        details: [],
      });
    }
  }, 60_000);

  it('the 101st request without credentials from one address gets 429, across both replicas', async () => {
    const statuses = await spread(100, '/api/v1/users', {});
    expect(statuses.filter((s) => s === 401)).toHaveLength(100);
    const over = await fetch(`${gateways[1]!.url}/api/v1/projects`);
    expect(over.status).toBe(429);
    expect(over.headers.get('x-ratelimit-limit')).toBe('100');
    expect(over.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    // Sign-ins come without credentials too: the same address is refused there.
    const signIn = await fetch(`${gateways[0]!.url}/auth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'owner@limits.example.com', password: 'a-long-password' }),
    });
    expect(signIn.status).toBe(429);
  }, 60_000);
});
