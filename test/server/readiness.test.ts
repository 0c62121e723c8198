import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fleet } from '../../src/gateway/engines/fleet.js';
import type { EngineStatus } from '../../src/gateway/engines/types.js';
import { createReadiness } from '../../src/server/readiness.js';
import { createLogger } from '../../src/shared/http/log.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { scrape } from '../helpers/prometheus.js';
import {
  createTestDatabase,
  deleteRedisPrefix,
  postgresAdminUrl,
  postgresAvailable,
  redisAvailable,
  redisUrl,
  uniqueRedisPrefix,
} from '../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { until } from '../helpers/wait.js';

// /health stays liveness; /health/ready says whether this gateway should get traffic.

const ready = async (url: string) => {
  const response = await fetch(`${url}/health/ready`);
  return {
    status: response.status,
    body: (await response.json()) as { status: string; checks: Record<string, unknown> },
  };
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
      body: {
        status: 'ready',
        checks: {
          database: 'up',
          redis: 'not_configured',
          engines: { 'sim-chat': 'ready', 'sim-reasoner': 'ready', 'sim-embed': 'ready' },
        },
      },
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
    const replica = (state: 'ready' | 'starting' | 'unhealthy') => ({
      id: `r-${state}`,
      state,
      container: null,
      address: '',
      startedAt: null,
      uptimeSeconds: null,
      inFlight: 0,
      served: 0,
      restarts: 0,
      host: null,
      gpus: [],
    });
    let engines: EngineStatus[] = [
      {
        model: 'qwen',
        kind: 'docker',
        desiredReplicas: 2,
        dockerHost: 'local',
        minReplicas: 1,
        maxReplicas: 1,
        replicas: [replica('starting'), replica('unhealthy')],
      },
      {
        model: 'bge',
        kind: 'docker',
        desiredReplicas: 1,
        dockerHost: 'local',
        minReplicas: 1,
        maxReplicas: 1,
        replicas: [replica('ready')],
      },
    ];
    const fleet = { status: () => engines } as unknown as Fleet;
    const readiness = createReadiness({ db, redis: null, fleet, inFlight });
    expect(await readiness()).toEqual({
      ready: false,
      body: {
        status: 'unavailable',
        checks: { database: 'up', redis: 'not_configured', engines: { qwen: 'unavailable', bge: 'ready' } },
      },
    });
    engines = [{ ...engines[0]!, replicas: [replica('ready'), replica('starting')] }, engines[1]!];
    expect((await readiness()).ready).toBe(true);
    // Scaled to zero (min_replicas 0): its next request starts a replica, so it is ready without
    // one; fixed at zero is not.
    engines = [{ ...engines[1]!, model: 'cold', desiredReplicas: 0, minReplicas: 0, maxReplicas: 2, replicas: [] }];
    expect((await readiness()).body.checks.engines).toEqual({ cold: 'ready' });
    engines = [{ ...engines[0]!, maxReplicas: 0 }];
    expect((await readiness()).body.checks.engines).toEqual({ cold: 'unavailable' });
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

/** Polls /health/ready (bounded) until it answers `status`, and answers that answer. */
async function readyWhen(url: string, status: number) {
  let last: Awaited<ReturnType<typeof ready>> | undefined;
  return until(
    `/health/ready answers ${status}`,
    async () => {
      last = await ready(url);
      return last.status === status && last;
    },
    { interval: 200, detail: () => last },
  );
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
    expect((await readyWhen(gateway.url, 503)).body).toMatchObject({
      status: 'unavailable',
      checks: { database: 'up', redis: 'down' },
    });
    expect((await metrics()).value('tollgate_dependency_up', { dependency: 'redis' })).toBe(0);
    await proxy.start();
    expect((await readyWhen(gateway.url, 200)).body).toMatchObject({ status: 'ready', checks: { redis: 'up' } });
    expect((await metrics()).value('tollgate_dependency_up', { dependency: 'redis' })).toBe(1);
  });
});

describe.skipIf(!redis)('a hanging Redis: connections accepted, nothing answered', () => {
  let proxy: TcpProxy;
  let gateway: TestGateway;
  const prefix = uniqueRedisPrefix();
  const lines: string[] = [];

  beforeAll(async () => {
    const target = new URL(redisUrl);
    proxy = await startTcpProxy(Number(target.port || 6379), target.hostname);
    target.hostname = '127.0.0.1';
    target.port = String(proxy.port);
    gateway = await startTestGateway(
      'pglite',
      { REDIS_URL: target.toString(), TOLLGATE_REDIS_PREFIX: prefix },
      { log: createLogger('info', (line) => lines.push(line)) },
    );
  });
  afterAll(async () => {
    proxy?.resume();
    await gateway?.close();
    await proxy?.stop();
    await deleteRedisPrefix(prefix);
  });

  it('counts as down for tollgate_dependency_up and the log, once, and as up again when it answers', async () => {
    const redisUp = async () =>
      (await scrape(`${gateway.url}/metrics`, gateway.adminToken.token)).value('tollgate_dependency_up', {
        dependency: 'redis',
      });
    const logged = (message: string) =>
      lines.filter((line) => (JSON.parse(line) as { message?: string }).message?.startsWith(message)).length;
    const { secret } = await gateway.tenant();
    const chat = () =>
      fetch(`${gateway.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-chat', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }),
      });
    expect((await chat()).status).toBe(200);
    expect(await redisUp()).toBe(1);

    proxy.hang();
    const refused = await chat();
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('limits_unavailable');
    await until('the gauge says Redis is down', async () => (await redisUp()) === 0, { timeout: 5_000, interval: 100 });
    expect(logged('redis unreachable')).toBe(1);
    // Still hanging: a further heartbeat PING fails (the next one is sent only once it has), still
    // down, and not logged again.
    const pings = proxy.count('\r\nping\r\n');
    await until('two more heartbeats are sent', () => pings() >= 2, { timeout: 5_000 });
    expect(await redisUp()).toBe(0);
    expect(logged('redis unreachable')).toBe(1);

    proxy.resume();
    await until('the gauge says Redis is up again', async () => (await redisUp()) === 1, {
      timeout: 5_000,
      interval: 100,
    });
    expect(logged('redis reachable again')).toBe(1);
    await until('a request succeeds again', async () => (await chat()).status === 200, {
      timeout: 5_000,
      interval: 100,
    });
  }, 30_000);
});
