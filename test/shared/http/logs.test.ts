import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createLogger, describeError } from '../../../src/shared/http/log.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import {
  createTestDatabase,
  deleteRedisPrefix,
  postgresAdminUrl,
  postgresAndRedisOrSkip,
  redisUrl,
  uniqueRedisPrefix,
} from '../../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy.js';
import { sleep, until } from '../../helpers/wait.js';

const ready = await postgresAndRedisOrSkip('the outage logs tests');

interface Line {
  level: string;
  message: string;
  requestId?: string;
  [field: string]: unknown;
}

/** The lines that tell an operator about an outage, or about a failed request. */
const outageLines = (lines: Line[]) =>
  lines.filter(
    (l) => (l.level === 'error' || l.level === 'warn') && /unreachable|reachable again|request failed/.test(l.message),
  );

/**
 * The outage lines are one when `what` became unreachable and one when it came back; a failure
 * shows the lines (which error opened each outage).
 */
function expectOneOutage(lines: Line[], what: string): void {
  const outage = outageLines(lines);
  expect(
    outage.map((l) => l.message),
    JSON.stringify(outage),
  ).toEqual([expect.stringMatching(new RegExp(`^${what} unreachable`)), `${what} reachable again`]);
}

/**
 * Sends a request every 20 ms for `ms` and returns the statuses seen: the steady traffic an outage
 * meets is the subject, not a wait.
 */
async function trickle(send: () => Promise<Response>, ms: number): Promise<number[]> {
  const statuses: number[] = [];
  const ends = Date.now() + ms;
  while (Date.now() < ends) {
    const response = await send();
    statuses.push(response.status);
    await response.arrayBuffer();
    await sleep(20);
  }
  return statuses;
}

/** Polls with requests until one is answered 200. */
function untilOk(send: () => Promise<Response>): Promise<true> {
  return until(
    'the gateway serves again',
    async () => {
      const response = await send();
      await response.arrayBuffer();
      return response.status === 200;
    },
    { interval: 100 },
  );
}

describe.skipIf(!ready)('logs: once per outage, no secrets or query parameters', () => {
  let pgProxy: TcpProxy;
  let redisProxy: TcpProxy;
  let database: { url: string; drop(): Promise<void> };
  let gateway: TestGateway;
  let secret: string;
  const prefix = uniqueRedisPrefix();
  const lines: Line[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    pgProxy = await startTcpProxy(Number(new URL(postgresAdminUrl).port || 5432));
    redisProxy = await startTcpProxy(Number(new URL(redisUrl).port || 6379), new URL(redisUrl).hostname);
    const pg = new URL(database.url);
    pg.hostname = '127.0.0.1';
    pg.port = String(pgProxy.port);
    gateway = await startTestGateway(
      'pglite',
      { DATABASE_URL: pg.toString(), REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`, TOLLGATE_REDIS_PREFIX: prefix },
      { log: createLogger('debug', (line) => void lines.push(JSON.parse(line) as Line)) },
    );
    ({ secret } = await gateway.tenant({ key: { requestsPerMinute: 100_000, maxConcurrency: 100 } }));
  });
  afterAll(async () => {
    await pgProxy?.start().catch(() => {});
    await redisProxy?.start().catch(() => {});
    await gateway?.close();
    await pgProxy?.stop();
    await redisProxy?.stop();
    await deleteRedisPrefix(prefix).catch(() => {});
    await database?.drop();
  });

  const chat = () =>
    fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }),
    });

  it('a Redis cut under a steady trickle of requests is one line when it starts and one when it ends', async () => {
    await untilOk(chat);
    const from = lines.length;
    await redisProxy.stop();
    const statuses = await trickle(chat, 3_000);
    await redisProxy.start();
    await untilOk(chat);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(20);
    expectOneOutage(lines.slice(from), 'redis');
  }, 30_000);

  it('a database cut is one line when it starts and one when it ends, with no query parameters, and known keys are served through it', async () => {
    await untilOk(chat);
    const from = lines.length;
    await pgProxy.stop();
    const statuses = await trickle(chat, 3_000);
    await pgProxy.start();
    await untilOk(chat);
    // The request path reads no database in steady state: a key it knows is served, its charges
    // journaled.
    expect(statuses.length).toBeGreaterThan(5);
    expect(statuses.every((s) => s === 200)).toBe(true);
    // The cut is seen by the catalog poll and the charge writer, and logged once each way.
    await gateway.services.applier.settled(10_000);
    expectOneOutage(lines.slice(from), 'database');
  }, 30_000);

  it('no line carries a key, its hash, or a query and its parameters', async () => {
    // The database outage above logged a failed admission read, whose parameters are the key's
    // hash; and here a statement the server refuses with the hash in its error message, logged as
    // the gateway logs errors. (The `x` in front: a hash that starts with ten digits would be "out
    // of range", not "invalid syntax".)
    const hash = createHash('sha256').update(secret).digest('hex');
    const refused = await gateway.services.db
      .execute(sql`select ('x' || ${hash}::text)::int`)
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Error);
    gateway.services.log.error('a statement failed', describeError(refused));
    expect(lines.at(-1)).toMatchObject({ message: 'a statement failed', code: '22P02' });
    const text = lines.map((l) => JSON.stringify(l)).join('\n');
    expect(lines.length).toBeGreaterThan(10);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(hash.slice(0, 32));
    expect(text).not.toMatch(/Failed query|params:/);
  });
});
