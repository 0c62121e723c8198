import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { startGateway } from '../../src/server/start.js';
import { createLogger } from '../../src/shared/http/log.js';
import { chargedIn, startTestGateway, TEST_GATEWAY_ENV, type TestGateway } from './gateway.js';
import { createTestDatabase } from './services.js';

/** A replica beside the first: the same database, a process state of its own. */
export type TestReplica = Omit<TestGateway, 'tenant'>;

/**
 * Gateway replicas in this process sharing one PostgreSQL database of the test's own (and, given
 * `engines`, one engines file): `first`, started at once, makes the test catalog and tenants;
 * `start` starts another replica on the same database (the first may be closed before, as a replica
 * that died). Each keeps its own gate, journal and runners, as separate processes do; they meet in
 * the database only (no Redis unless `env` names one). `close` closes every replica still running,
 * then drops the database and removes the engines file.
 *
 * @example
 * const replicas = await gatewayReplicas({ engines: [{ kind: 'static', model: 'sim-chat', url: sim.url }] });
 * const two = await replicas.start();
 */
export interface GatewayReplicas {
  first: TestGateway;
  /** The settings every replica has: the database, the engines file, the fleet's `env`. */
  env: Record<string, string>;
  /** Starts another replica; `env` adds to the fleet's settings. */
  start(env?: Record<string, string>): Promise<TestReplica>;
  close(): Promise<void>;
}

export async function gatewayReplicas(
  options: { env?: Record<string, string>; engines?: Array<Record<string, unknown>> } = {},
): Promise<GatewayReplicas> {
  const database = await createTestDatabase();
  const replicas: Array<{ close(): Promise<void> }> = [];
  let enginesDir: string | null = null;
  const close = async () => {
    await Promise.allSettled(replicas.map((replica) => replica.close()));
    await database.drop();
    if (enginesDir) await rm(enginesDir, { recursive: true, force: true });
  };
  try {
    const env: Record<string, string> = { DATABASE_URL: database.url, ...options.env };
    if (options.engines) {
      enginesDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-test-engines-'));
      env.TOLLGATE_ENGINES_FILE = path.join(enginesDir, 'engines.json');
      await writeFile(env.TOLLGATE_ENGINES_FILE, JSON.stringify({ engines: options.engines }));
    }
    // Its own store is the database above, which `close` drops: `pglite` makes none of its own.
    const first = closedOnce(await startTestGateway('pglite', env));
    replicas.push(first);
    return {
      first,
      env,
      async start(extra = {}) {
        const config = loadConfig({ ...TEST_GATEWAY_ENV, ...env, ...extra });
        const gateway = await startGateway(config, { log: createLogger('silent') });
        const replica = closedOnce({
          ...gateway,
          baseURL: `${gateway.url}/v1`,
          charged: (timeoutMs?: number) => chargedIn(gateway, timeoutMs),
        });
        replicas.push(replica);
        return replica;
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The replica with a `close` that closes it once, whoever calls it first (a test, or `close`). */
function closedOnce<T extends { close(): Promise<void> }>(replica: T): T {
  let closing: Promise<void> | null = null;
  const closeIt = replica.close.bind(replica);
  return Object.assign(replica, { close: () => (closing ??= closeIt()) });
}
