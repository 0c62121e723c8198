import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEngineDefinitions, type DockerDefinition } from '../../../src/gateway/engines/definitions.js';
import { removeEngineContainers, startDockerEngine } from '../../../src/gateway/engines/docker/engine.js';
import { pgScaleStore } from '../../../src/gateway/engines/docker/scale-store.js';
import { ownContainers } from '../../../src/gateway/engines/docker/spec.js';
import type { ReplicaLoad } from '../../../src/gateway/engines/load.js';
import type { Engine } from '../../../src/gateway/engines/types.js';
import { openStore, type Store } from '../../../src/shared/db/client.js';
import type { Logger } from '../../../src/shared/http/log.js';
import { buildSimulatorImage, dockerAvailable, freePortRange, SIM_IMAGE_COMMAND } from '../../helpers/docker.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';

const MODEL = 'sim-lease';
const DEPLOYMENT = `t${process.pid}l`;
const available = (await postgresAvailable()) && (await dockerAvailable());

/**
 * Two gateway processes drive one deployment's containers: their engines
 * share the replica count and the scaling lease through PostgreSQL. Here two
 * engine instances on one real database and Docker engine, as two gateways'
 * would be, both seeing the same queue.
 */
describe.runIf(available)('the scaling lease across gateway processes', () => {
  const docker = new Docker();
  let database: { url: string; drop: () => Promise<void> };
  let store: Store;

  beforeAll(async () => {
    database = await createTestDatabase();
    store = await openStore({ databaseUrl: database.url, dataDir: 'memory://' });
    await removeEngineContainers(docker, MODEL, DEPLOYMENT);
  }, 60_000);

  afterAll(async () => {
    await removeEngineContainers(docker, MODEL, DEPLOYMENT);
    await store?.close();
    await database?.drop();
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

  it('two engines that both see a queue scale by one step, not two', async () => {
    const image = await buildSimulatorImage();
    const [definition] = parseEngineDefinitions(
      JSON.stringify({
        engines: [
          {
            kind: 'docker',
            model: MODEL,
            image,
            entrypoint: [...SIM_IMAGE_COMMAND],
            hf_repo: 'tollgate/sim-lease',
            port: await freePortRange(3),
            pull: 'never',
            startup_timeout_s: 60,
            min_replicas: 1,
            max_replicas: 3,
            autoscaling: { waiting_per_replica: 1, window_s: 0.5, idle_cooldown_s: 600 },
          },
        ],
      }),
    );
    // What a scraper of the replicas' /metrics would tell both gateways: five requests waiting on each, while `queued`.
    let queued = false;
    const loadOf = (): ReplicaLoad | null => (queued ? { waiting: 5, running: 4, kvCacheUsage: 0.5, prefixHitRate: null, scrapedAt: Date.now() } : null);
    const steps: string[] = [];
    const engines: Engine[] = [];
    try {
      for (const name of ['a', 'b']) {
        engines.push(
          await startDockerEngine(definition as DockerDefinition, {
            docker: new Docker(),
            log: recording(steps, name),
            env: {},
            pollMs: 250,
            deployment: DEPLOYMENT,
            scaleStore: pgScaleStore(store.db, DEPLOYMENT, MODEL),
            loadOf,
          }),
        );
      }
      const count = () => pgScaleStore(store.db, DEPLOYMENT, MODEL).read();
      // The queue comes once both run the first replica, so both windows start within a pass of each other.
      await expect.poll(() => engines.map((e) => e.status().replicas.filter((r) => r.state === 'ready').length), { timeout: 30_000 }).toEqual([1, 1]);
      queued = true;
      await expect.poll(count, { timeout: 30_000, interval: 50 }).toBe(2);
      queued = false;
      // Both engines run the second replica once it is ready; the step is over, and no second one followed.
      await expect.poll(() => engines.map((e) => e.status().replicas.filter((r) => r.state === 'ready').length), { timeout: 30_000 }).toEqual([2, 2]);
      expect(await count()).toBe(2);
      expect(steps).toHaveLength(1);
      const running = await docker.listContainers({ filters: { label: ownContainers(DEPLOYMENT, MODEL) } });
      expect(running.map((c) => c.Labels['tollgate.replica']).sort()).toEqual(['0', '1']);
    } finally {
      await Promise.all(engines.map((e) => e.close()));
    }
  }, 120_000);
});

/** A logger that keeps the engines' autoscaling steps, by engine. */
function recording(steps: string[], name: string): Logger {
  const keep = (message: string, fields?: Record<string, unknown>) => {
    if (message === 'engine autoscaled') steps.push(`${name}: ${String(fields?.from)} -> ${String(fields?.to)}`);
  };
  return { debug: keep, info: keep, warn: keep, error: keep };
}
