import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { startGateway, type RunningGateway } from '../../../src/server/start.js';
import { createLogger } from '../../../src/shared/http/log.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { type GatewayProcess, startGatewayProcess } from '../../helpers/processes.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';
import { skippedWithout } from '../../helpers/skips.js';
import { until } from '../../helpers/wait.js';
import { OPERATOR, orgWithCluster, runEnded, runSandboxRunning, runScratch, sandboxKinds } from './harness.js';

/**
 * Several gateway processes share the queue through PostgreSQL: each run is
 * claimed by one worker (`FOR UPDATE SKIP LOCKED`), and the run of a worker
 * that dies fails once its claim's lease has passed.
 */

const kinds = await sandboxKinds();
const hasPostgres = kinds.length > 0 && (await postgresAvailable());
if (!hasPostgres) console.warn('skipping run workers across processes: they need PostgreSQL');
skippedWithout(
  kinds.length === 0
    ? 'run workers across processes: no run sandbox here'
    : hasPostgres
      ? null
      : 'run workers across processes: no PostgreSQL',
);

describe.each(hasPostgres ? kinds : [])('run workers in two gateway processes ($name sandbox)', (kind) => {
  let database: { url: string; drop(): Promise<void> };
  let scratch: Awaited<ReturnType<typeof runScratch>>;
  let dataDir: string;
  /** An API-only gateway (no workers) in this process, for setting up and asking. */
  let api: RunningGateway;
  const workers: GatewayProcess[] = [];

  /** The pid of the gateway process whose worker claimed each run (its claim is `host:pid:random`). */
  async function claimantPids(runIds: string[]): Promise<number[]> {
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const rows = await sql<
        Array<{ id: string; claimed_by: string }>
      >`select id, claimed_by from runs where id = any(${runIds})`;
      return runIds.map((id) => Number(rows.find((row) => row.id === id)!.claimed_by.split(':')[1]));
    } finally {
      await sql.end();
    }
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    scratch = await runScratch();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-workers-'));
    const env = {
      ...scratch.env,
      ...kind.env,
      DATABASE_URL: database.url,
      TOLLGATE_ADMIN_TOKEN: OPERATOR,
      TOLLGATE_PASSWORD_COST: '10',
      TOLLGATE_RUN_LEASE_MS: '2000',
      TOLLGATE_RUN_WORKERS: '2',
    };
    api = await startGateway(
      loadConfig({
        ...env,
        PORT: '0',
        TOLLGATE_HOST: '127.0.0.1',
        TOLLGATE_DATA_DIR: 'memory://',
        TOLLGATE_SEED_DEMO: 'false',
        TOLLGATE_RUN_WORKERS: '0',
      }),
      {
        log: createLogger('silent'),
      },
    );
    for (const name of ['worker-a', 'worker-b'])
      workers.push(await startGatewayProcess(name, { ...env, TOLLGATE_DATA_DIR: path.join(dataDir, name) }));
  });
  afterAll(async () => {
    for (const worker of workers) await worker.child.stop('SIGTERM');
    await api?.close();
    await database?.drop();
    await scratch?.remove();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('twelve runs queued at once are each applied once, by both processes', async () => {
    const setups: Array<Awaited<ReturnType<typeof orgWithCluster>>> = [];
    for (let i = 0; i < 12; i++) setups.push(await orgWithCluster(api as TestGateway));
    const queued = await Promise.all(
      setups.map(({ owner, cluster, stackName }) =>
        owner('POST', `/clusters/${cluster.id}/runs`, {
          stack: stackName,
          inputs: { name: 'x', mode: 'slow', count: 3 },
        }),
      ),
    );
    expect(queued.map((response) => response.status)).toEqual(Array(12).fill(201));
    const ended = await Promise.all(queued.map((response, i) => runEnded(setups[i]!.owner, response.body.id, 150_000)));
    expect(ended.map((run) => run.state)).toEqual(Array(12).fill('APPLIED'));
    const applies = (await scratch.read()).filter((record) => record.command === 'apply');
    const clusterIds = setups.map((setup) => setup.cluster.id).sort();
    expect(applies.map((record) => record.vars.tollgate_cluster_id).sort()).toEqual(clusterIds);
    // Both processes took some.
    expect(new Set(await claimantPids(ended.map((run) => run.id)))).toEqual(
      new Set(workers.map((worker) => worker.child.pid)),
    );
    // Four at a time (two processes, two workers each) in three waves of Docker sandboxes: a loaded
    // CI machine needed more than 45 s.
  }, 180_000);

  it('the run of a worker that is killed fails once its claim has expired, on the other worker', async () => {
    const { owner, cluster, stackName } = await orgWithCluster(api as TestGateway);
    const queued = await owner('POST', `/clusters/${cluster.id}/runs`, {
      stack: stackName,
      inputs: { name: 'x', mode: 'hang' },
    });
    await until('a worker has started applying', async () =>
      (await scratch.read()).some(
        (record) => record.command === 'apply' && record.vars.tollgate_cluster_id === cluster.id,
      ),
    );
    const [claimantPid] = await claimantPids([queued.body.id]);
    const claimant = workers.find((worker) => worker.child.pid === claimantPid)!;
    // The sandbox dies with the gateway that started it (bwrap --die-with-parent; the container's
    // stdin closes): nothing is left running.
    await claimant.child.stop('SIGKILL');
    const killedAt = Date.now();
    const run = await runEnded(owner, queued.body.id, 10_000);
    expect(run).toMatchObject({ state: 'FAILED', failure: expect.stringContaining('The worker applying it stopped') });
    // One lease (2 s) and a poll of the other worker, with room for a loaded machine.
    expect(Date.now() - killedAt).toBeLessThan(6_000);
    workers.splice(workers.indexOf(claimant), 1);
    await until(
      "the killed worker's sandbox is gone",
      async () => !(await runSandboxRunning(kind.name, queued.body.id)),
      { interval: 100 },
    );
  });
});
