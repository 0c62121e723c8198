import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import OpenAI from 'openai';
import { afterAll, beforeAll } from 'vitest';
import { parseAmount, pricePerTokenFromMillion } from '../../src/gateway/billing/money.js';
import { loadConfig } from '../../src/config/index.js';
import { startGateway, type RunningGateway } from '../../src/server/start.js';
import { createLogger, type Logger } from '../../src/shared/http/log.js';
import type { KeySettings } from '../../src/gateway/keys/service.js';
import { createTestDatabase, postgresAvailable, redisAvailable, redisUrl } from './services.js';

export type StoreKind = 'pglite' | 'postgres';

/**
 * Which stores this run can test: PGlite always, PostgreSQL when it answers (or
 * REQUIRE_SERVICES=1).
 */
export async function availableStores(): Promise<StoreKind[]> {
  return (await postgresAvailable()) ? ['pglite', 'postgres'] : ['pglite'];
}

/**
 * The one store a file runs on when the store's behaviour is not what it tests: PostgreSQL when it
 * answers (what production and CI run; the embedded store is that of the many files that start
 * `'pglite'` gateways), PGlite otherwise. The stores' own files, the gates' conformance and money
 * (charges, the ledger, budgets, usage, costs) and what keeps bytes in the blob store (files,
 * stack uploads) run on both (`availableStores`): CONTRIBUTING's "Tests" says which.
 */
export async function oneStore(): Promise<StoreKind[]> {
  return (await postgresAvailable()) ? ['postgres'] : ['pglite'];
}

/**
 * Where the hourly and sign-in limits count: in the process, or in Redis (one count for every
 * replica).
 */
export type LimitsKind = 'memory' | 'redis';

/**
 * The cases of a test of the limits: each available store with the counts in
 * the process, and PGlite with them in Redis when it answers (its absence is
 * said and the case left out, or fails the run under REQUIRE_SERVICES=1).
 */
export async function storesAndLimits(): Promise<Array<{ store: StoreKind; limits: LimitsKind }>> {
  const [stores, hasRedis] = await Promise.all([availableStores(), redisAvailable()]);
  const inRedis = hasRedis ? [{ store: 'pglite' as const, limits: 'redis' as const }] : [];
  return [...stores.map((store) => ({ store, limits: 'memory' as const })), ...inRedis];
}

/**
 * The cases of a test of the limits when the store is not what it tests: `oneStore()` with the
 * counts in the process, and PGlite with them in Redis when it answers; so each store and each
 * place the counts are kept is run once, paired rather than crossed.
 */
export async function oneStoreAndLimits(): Promise<Array<{ store: StoreKind; limits: LimitsKind }>> {
  const [[store], hasRedis] = await Promise.all([oneStore(), redisAvailable()]);
  const inRedis = hasRedis ? [{ store: 'pglite' as const, limits: 'redis' as const }] : [];
  return [{ store: store!, limits: 'memory' as const }, ...inRedis];
}

/**
 * The settings that make a test gateway count its limits in Redis under `prefix` (a
 * `uniqueRedisPrefix()`), or none.
 */
export function limitsEnv(limits: LimitsKind, prefix: string): Record<string, string> {
  return limits === 'redis' ? { REDIS_URL: redisUrl, TOLLGATE_REDIS_PREFIX: prefix } : {};
}

export interface TestGateway extends RunningGateway {
  baseURL: string;
  /** Creates an organization with `credit`, a key, and returns both. */
  tenant(options?: {
    credit?: string;
    key?: Partial<KeySettings> & { projectId?: string };
  }): Promise<{ orgId: string; secret: string; keyId: string }>;
  /**
   * Resolves once no billed call is under way here and every charge is in the
   * store: what is read then is final, no charge can still arrive. Throws
   * after `timeoutMs` (each).
   */
  charged(timeoutMs?: number): Promise<void>;
}

/** The test catalog: the simulator's models from engines/engines.json, at fixed prices. */
export const TEST_MODELS = {
  chat: {
    id: 'sim-chat',
    displayName: 'Sim Chat',
    hfRepoId: 'tollgate-test/Sim-Chat-1B',
    input: '0.15',
    output: '0.60',
  },
  reasoner: {
    id: 'sim-reasoner',
    displayName: 'Sim Reasoner',
    hfRepoId: 'tollgate-test/Sim-Reasoner',
    input: '0.30',
    output: '1.20',
  },
  embed: { id: 'sim-embed', displayName: 'Sim Embed', hfRepoId: 'tollgate-test/Sim-Embed', input: '0.02', output: '0' },
} as const;

/** The settings every test gateway starts with, before its own. */
export const TEST_GATEWAY_ENV: Readonly<Record<string, string>> = {
  PORT: '0',
  TOLLGATE_HOST: '127.0.0.1',
  TOLLGATE_DATA_DIR: 'memory://',
  TOLLGATE_SEED_DEMO: 'false',
  TOLLGATE_ADMIN_TOKEN: 'test-operator-token-0123456789',
};

/**
 * Resolves once no billed call is under way on `gateway` and every charge is in the store (see
 * `TestGateway.charged`); throws after `timeoutMs` (each).
 */
export async function chargedIn(gateway: RunningGateway, timeoutMs = 5_000): Promise<void> {
  if (!(await gateway.services.inFlight.idle(timeoutMs)))
    throw new Error(`${gateway.services.inFlight.size} billed calls still under way after ${timeoutMs} ms`);
  if (!(await gateway.services.applier.settled(timeoutMs)))
    throw new Error(`${gateway.services.journal.pendingCount} charges still not written after ${timeoutMs} ms`);
}

/**
 * Starts the real gateway on a loopback port, on a store of its own: an
 * in-memory PGlite, or a fresh PostgreSQL database dropped on close. Silent
 * unless `options.log` is given (to capture what the gateway logs).
 * `options.engines` (model id → URL) serves those models from static engines
 * at those URLs (a simulator of the test's own), through an engines file made
 * for it and removed on close.
 */
export async function startTestGateway(
  store: StoreKind,
  env: Record<string, string> = {},
  options: { log?: Logger; spanExporter?: SpanExporter; engines?: Record<string, string> } = {},
): Promise<TestGateway> {
  const database = store === 'postgres' ? await createTestDatabase() : null;
  const enginesDir = options.engines ? await mkdtemp(path.join(os.tmpdir(), 'tollgate-test-engines-')) : null;
  if (enginesDir) {
    const engines = Object.entries(options.engines!).map(([model, url]) => ({ kind: 'static', model, url }));
    await writeFile(path.join(enginesDir, 'engines.json'), JSON.stringify({ engines }));
    env = { TOLLGATE_ENGINES_FILE: path.join(enginesDir, 'engines.json'), ...env };
  }
  const config = loadConfig({ ...TEST_GATEWAY_ENV, DATABASE_URL: database?.url, ...env });
  // A gateway that fails to start leaves nothing behind: its database and engines file go with it.
  const gateway = await startGateway(config, {
    log: options.log ?? createLogger('silent'),
    spanExporter: options.spanExporter,
  }).catch(async (error: unknown) => {
    await database?.drop();
    if (enginesDir) await rm(enginesDir, { recursive: true, force: true });
    throw error;
  });
  const { catalog, orgs, wallets, keys } = gateway.services;
  for (const [task, model] of Object.entries(TEST_MODELS)) {
    await catalog.add({
      id: model.id,
      displayName: model.displayName,
      hfRepoId: model.hfRepoId,
      taskType: task === 'embed' ? 'embedding' : 'chat',
      contextLength: task === 'embed' ? 512 : 8192,
      enabled: true,
    });
    await catalog.setPrice(model.id, pricePerTokenFromMillion(model.input), pricePerTokenFromMillion(model.output));
  }
  return {
    ...gateway,
    baseURL: `${gateway.url}/v1`,
    async tenant(options = {}) {
      const org = await orgs.create('test org');
      const credit = options.credit ?? '5.00';
      if (credit !== '0') await wallets.credit(org.id, 'topup', parseAmount(credit));
      const { key, secret } = await keys.create({ orgId: org.id, name: 'test', ...options.key });
      return { orgId: org.id, secret, keyId: key.id };
    },
    charged: (timeoutMs?: number) => chargedIn(gateway, timeoutMs),
    async close() {
      await gateway.close();
      await database?.drop();
      if (enginesDir) await rm(enginesDir, { recursive: true, force: true });
    },
  };
}

export interface GatewayFixture {
  gateway: TestGateway;
  /** An openai client with a funded tenant's key, no retries. */
  client: OpenAI;
  secret: string;
}

/**
 * Starts a test gateway for the enclosing `describe` and a funded tenant with
 * an openai client; stops the gateway after the last test.
 *
 * @example
 * const t = useTestGateway('pglite');
 * it('…', async () => { await t.client.models.list(); });
 */
export function useTestGateway(store: StoreKind, env: Record<string, string> = {}): GatewayFixture {
  const fixture = {} as GatewayFixture;
  beforeAll(async () => {
    fixture.gateway = await startTestGateway(store, env);
    const { secret } = await fixture.gateway.tenant();
    fixture.secret = secret;
    fixture.client = new OpenAI({ baseURL: fixture.gateway.baseURL, apiKey: secret, maxRetries: 0 });
  });
  afterAll(() => fixture.gateway?.close());
  return fixture;
}
