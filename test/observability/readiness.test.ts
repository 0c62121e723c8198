import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fleet } from '../../src/engines/fleet.js';
import type { EngineStatus } from '../../src/engines/types.js';
import { createReadiness } from '../../src/observability/readiness.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { scrape } from '../helpers/prometheus.js';
import { createTestDatabase, deleteRedisPrefix, postgresAdminUrl, postgresAvailable, redisAvailable, redisUrl, uniqueRedisPrefix } from '../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

// /health stays liveness; /health/ready says whether this gateway should get traffic.

const ready = async (url: string) => {
  const response = await fetch(`${url}/health/ready`);
  return { status: response.status, body: (await response.json()) as { status: string; checks: Record<string, unknown> } };
};

describe('/health/ready', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startTestGateway('pglite');
  });
  afterAll(() => gateway?.close());

  it('is 200 with every check when the store and every model’s engine are there', async () => {
    expect(await ready(gateway.url)).toEqual({
      status: 200,
      body: { status: 'ready', checks: { database: 'up', redis: 'not_configured', engines: { 'sim-chat': 'ready', 'sim-reasoner': 'ready', 'sim-embed': 'ready' } } },
    });
  });

  it('is 503 while the gateway drains, while /health stays the liveness check', async () => {
    gateway.services.inFlight.draining = true;
    try {
      const answer = await ready(gateway.url);
      expect(answer.status).toBe(503);
      expect(answer.body.status).toBe('draining');
    } finally {
      gateway.services.inFlight.draining = false;
    }
    expect((await ready(gateway.url)).status).toBe(200);
    expect((await fetch(`${gateway.url}/health`)).status).toBe(200);
  });

  it('is 503 while every replica of some model is unavailable (a Docker engine loading its model)', async () => {
    const { db, inFlight } = gateway.services;
    const replica = (state: 'ready' | 'starting' | 'unhealthy') => ({ id: `r-${state}`, state, container: null, address: '', startedAt: null, uptimeSeconds: null, inFlight: 0, served: 0, restarts: 0 });
    let engines: EngineStatus[] = [
      { model: 'qwen', kind: 'docker', desiredReplicas: 2, dockerHost: 'local', replicas: [replica('starting'), replica('unhealthy')] },
      { model: 'bge', kind: 'docker', desiredReplicas: 1, dockerHost: 'local', replicas: [replica('ready')] },
    ];
    const fleet = { status: () => engines } as unknown as Fleet;
    const readiness = createReadiness({ db, redis: null, fleet, inFlight });
    expect(await readiness()).toEqual({ ready: false, body: { status: 'unavailable', checks: { database: 'up', redis: 'not_configured', engines: { qwen: 'unavailable', bge: 'ready' } } } });
    engines = [{ ...engines[0]!, replicas: [replica('ready'), replica('starting')] }, engines[1]!];
    expect((await readiness()).ready).toBe(true);
  });
});

const postgres = await postgresAvailable();

describe.skipIf(!postgres)('/health/ready with PostgreSQL cut (a TCP proxy in between)', () => {
  let proxy: TcpProxy;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let gateway: TestGateway;

  beforeAll(async () => {
    database = await createTestDatabase();
    proxy = await startTcpProxy(Number(new URL(postgresAdminUrl).port || 5432), new URL(postgresAdminUrl).hostname);
    const url = new URL(database.url);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    gateway = await startTestGateway('pglite', { DATABASE_URL: url.toString() });
  });
  afterAll(async () => {
    await gateway?.close();
    await proxy?.stop();
    await database?.drop();
  });

  it('goes 503 (database down) when PostgreSQL cannot be reached, and 200 when it is back', async () => {
    expect((await ready(gateway.url)).status).toBe(200);
    await proxy.stop();
    const cut = await ready(gateway.url);
    expect(cut.status).toBe(503);
    expect(cut.body).toMatchObject({ status: 'unavailable', checks: { database: 'down' } });
    // Still alive: an orchestrator must not restart a gateway for its database's outage.
    expect((await fetch(`${gateway.url}/health`)).status).toBe(200);
    await proxy.start();
    expect((await readyWhen(gateway.url, 200)).body).toMatchObject({ status: 'ready', checks: { database: 'up' } });
  });
});

/** Polls /health/ready (bounded) until it answers `status`. */
async function readyWhen(url: string, status: number) {
  const deadline = Date.now() + 10_000;
  let answer = await ready(url);
  while (answer.status !== status && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    answer = await ready(url);
  }
  return answer;
}

const redis = await redisAvailable();

describe.skipIf(!redis)('/health/ready and tollgate_dependency_up with Redis cut (a TCP proxy in between)', () => {
  let proxy: TcpProxy;
  let gateway: TestGateway;
  const prefix = uniqueRedisPrefix();

  beforeAll(async () => {
    const target = new URL(redisUrl);
    proxy = await startTcpProxy(Number(target.port || 6379), target.hostname);
    target.hostname = '127.0.0.1';
    target.port = String(proxy.port);
    gateway = await startTestGateway('pglite', { REDIS_URL: target.toString(), TOLLGATE_REDIS_PREFIX: prefix });
  });
  afterAll(async () => {
    await gateway?.close();
    await proxy?.stop();
    await deleteRedisPrefix(prefix);
  });

  it('goes 503 (redis down) when Redis cannot be reached, and 200 when it is back', async () => {
    const metrics = () => scrape(`${gateway.url}/metrics`, gateway.adminToken.token);
    expect(await ready(gateway.url)).toMatchObject({ status: 200, body: { checks: { redis: 'up' } } });
    expect((await metrics()).value('tollgate_dependency_up', { dependency: 'redis' })).toBe(1);
    await proxy.stop();
    expect((await readyWhen(gateway.url, 503)).body).toMatchObject({ status: 'unavailable', checks: { database: 'up', redis: 'down' } });
    expect((await metrics()).value('tollgate_dependency_up', { dependency: 'redis' })).toBe(0);
    await proxy.start();
    expect((await readyWhen(gateway.url, 200)).body).toMatchObject({ status: 'ready', checks: { redis: 'up' } });
    expect((await metrics()).value('tollgate_dependency_up', { dependency: 'redis' })).toBe(1);
  });
});
