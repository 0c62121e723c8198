import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeEngineContainers } from '../../../src/gateway/engines/docker/engine.js';
import { pgScaleStore } from '../../../src/gateway/engines/docker/scale-store.js';
import { ownContainers } from '../../../src/gateway/engines/docker/spec.js';
import { openStore, type Store } from '../../../src/shared/db/client.js';
import { engineScaling } from '../../../src/shared/db/schema.js';
import { buildSimulatorImage, dockerAvailable, freePortRange, SIM_IMAGE_COMMAND } from '../../helpers/docker.js';
import { adminCallTo, type GatewayProcess, startGatewayProcess } from '../../helpers/processes.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';

const MODEL = 'sim-lease';
const DEPLOYMENT = `t${process.pid}l`;
const ADMIN_TOKEN = 'lease-operator-token-0123456789';
const available = (await postgresAvailable()) && (await dockerAvailable());

/**
 * Two gateway processes drive one deployment's containers: they share the
 * replica count and the scaling lease through PostgreSQL. First the store's
 * contract, then two real gateway processes (`node dist/main.js`) on one
 * database and Docker engine, both seeing the same queue.
 */
describe.runIf(available)('the scaling lease across gateway processes', () => {
  const docker = new Docker();
  let database: { url: string; drop: () => Promise<void> };
  let store: Store;
  let dir: string;
  let enginesFile: string;
  const gateways: GatewayProcess[] = [];
  const desired = () => pgScaleStore(store.db, DEPLOYMENT, MODEL).read();
  /** Who holds the engine's scaling lease, if anyone. */
  const lease = async () => {
    const [row] = await store.db
      .select({ holder: engineScaling.holder })
      .from(engineScaling)
      .where(and(eq(engineScaling.deployment, DEPLOYMENT), eq(engineScaling.engine, MODEL)));
    return row?.holder ?? null;
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    store = await openStore({ databaseUrl: database.url, dataDir: 'memory://' });
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-lease-'));
    enginesFile = path.join(dir, 'engines.json');
    await removeEngineContainers(docker, MODEL, DEPLOYMENT);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.child.stop('SIGTERM')));
    await removeEngineContainers(docker, MODEL, DEPLOYMENT);
    await store?.close();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('takes one step at a time: a count that moved, or a lease another holds, refuses a step', async () => {
    const a = pgScaleStore(store.db, DEPLOYMENT, 'store-only');
    const b = pgScaleStore(store.db, DEPLOYMENT, 'store-only');
    expect(await a.load(1)).toBe(1);
    expect(await b.load(5)).toBe(1);
    expect(await a.step(1, 2, 'a', 10_000)).toBe(true);
    // b saw 1 too: its step from 1 is refused, and from 2 too while a's step holds the lease.
    expect(await b.step(1, 2, 'b', 10_000)).toBe(false);
    expect(await b.step(2, 3, 'b', 10_000)).toBe(false);
    await a.release('a');
    expect(await b.step(2, 3, 'b', 10)).toBe(true);
    // A holder that died: its lease expires, and the next step goes through.
    await expect.poll(() => a.step(3, 2, 'a', 10_000), { timeout: 5_000 }).toBe(true);
    expect(await b.read()).toBe(2);
  });

  it('two gateway processes that both see a queue scale the engine by one step, not two', async () => {
    // Each replica takes 8 s to load (the simulator's --startup-delay-ms, as a model's weights do).
    // The queue is made once: the clients stop at the first step and what they sent drains in about
    // 5 s, before the new replica is ready. Without the lease, the other process, which still sees
    // the queue on its one ready replica, would take a second step (2 -> 3) while the first one's
    // replica loads.

    const image = await buildSimulatorImage();
    await writeFile(
      enginesFile,
      JSON.stringify({
        engines: [
          {
            kind: 'docker',
            model: MODEL,
            image,
            entrypoint: [...SIM_IMAGE_COMMAND],
            hf_repo: 'tollgate/sim-lease',
            served_model_name: MODEL,
            // A loaded vLLM that runs one sequence at a time: every other request waits, and both
            // gateways scrape that queue.
            args: [
              '--num-gpu-blocks-override',
              '512',
              '--max-num-seqs',
              '1',
              '--decode-ms-per-step',
              '20',
              '--startup-delay-ms',
              '8000',
            ],
            port: await freePortRange(3),
            pull: 'never',
            startup_timeout_s: 60,
            min_replicas: 1,
            max_replicas: 3,
            autoscaling: { waiting_per_replica: 1, window_s: 1, idle_cooldown_s: 600 },
          },
        ],
      }),
    );
    const env = {
      DATABASE_URL: database.url,
      TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      TOLLGATE_ENGINES_FILE: enginesFile,
      TOLLGATE_DATA_DIR: path.join(dir, 'data'),
      TOLLGATE_DEPLOYMENT: DEPLOYMENT,
      TOLLGATE_ENGINE_POLL_MS: '250',
      TOLLGATE_LOG_LEVEL: 'info',
    };
    const first = await startGatewayProcess('gateway-a', env);
    gateways.push(first);
    gateways.push(await startGatewayProcess('gateway-b', env));
    const secret = await tenantOn(first.url);
    const ready = async () => Promise.all(gateways.map(async (g) => (await engineOn(g.url)).ready_replicas));
    await until('both gateways run the first replica', async () => (await ready()).join() === '1,1', {
      timeout: 60_000,
    });

    // Eight clients on each gateway, one replica that runs one at a time: both see the queue, both
    // windows run out within a scrape of each other.
    let loading = true;
    const statuses: number[] = [];
    const clients = gateways.flatMap((gateway) =>
      Array.from({ length: 8 }, async () => {
        while (loading) {
          const response = await fetch(`${gateway.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              model: MODEL,
              max_tokens: 10,
              ignore_eos: true,
              messages: [{ role: 'user', content: 'hello' }],
            }),
          });
          await response.arrayBuffer();
          statuses.push(response.status);
        }
      }),
    );
    try {
      await until('the count stepped to 2', async () => (await desired()) === 2, { timeout: 60_000, interval: 20 });
    } finally {
      loading = false;
      await Promise.all(clients);
    }
    await until('both gateways run the second replica', async () => (await ready()).join() === '2,2', {
      timeout: 60_000,
      detail: async () => ({
        engines: await Promise.all(gateways.map((g) => adminCallTo(g.url, ADMIN_TOKEN, 'GET', '/engines'))),
        logs: gateways.map((g) => g.child.output().slice(-3000)),
      }),
    });
    // The step is over once its holder gives the lease back: past that point, a second step would
    // have been logged already.
    await until('the lease is given back', async () => (await lease()) === null, { timeout: 10_000 });
    const steps = gateways.flatMap((g) =>
      g.child
        .output()
        .split('\n')
        .filter((line) => line.includes('engine autoscaled')),
    );
    expect(steps).toHaveLength(1);
    expect(steps[0]).toMatch(/"from":1,"to":2/);
    expect(await desired()).toBe(2);
    const running = await docker.listContainers({ filters: { label: ownContainers(DEPLOYMENT, MODEL) } });
    expect(running.map((c) => c.Labels['tollgate.replica']).sort()).toEqual(['0', '1']);
    expect(statuses.length).toBeGreaterThanOrEqual(16);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
  }, 180_000);
});

/**
 * Adds the model, its price and a funded organization with a key, through the operator API of one
 * gateway (they share the database).
 */
async function tenantOn(url: string): Promise<string> {
  const admin = <T = Record<string, unknown>>(method: string, route: string, body?: unknown) =>
    adminCallTo<T>(url, ADMIN_TOKEN, method, route, body);
  await admin('POST', '/models', {
    id: MODEL,
    display_name: 'Sim Lease',
    hf_repo_id: 'tollgate-test/Sim-Lease',
    task_type: 'chat',
    context_length: 8192,
  });
  await admin('PUT', `/prices/${MODEL}`, { input_per_million: '0.15', output_per_million: '0.60' });
  const org = await admin<{ id: string }>('POST', '/orgs', { name: 'lease test' });
  await admin('POST', `/orgs/${org.id}/wallet/topups`, { amount: '100' });
  const key = await admin<{ secret: string }>('POST', `/orgs/${org.id}/keys`, {
    name: 'lease',
    max_concurrency: 100,
    requests_per_minute: 100_000,
  });
  return key.secret;
}

/** The engine as one gateway's operator API shows it. */
async function engineOn(url: string): Promise<{ desired_replicas: number; ready_replicas: number }> {
  const engines = await adminCallTo<{ data: { model: string; desired_replicas: number; ready_replicas: number }[] }>(
    url,
    ADMIN_TOKEN,
    'GET',
    '/engines',
  );
  return engines.data.find((e) => e.model === MODEL)!;
}
