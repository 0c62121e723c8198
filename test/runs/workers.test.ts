import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startGateway, type RunningGateway } from '../../src/gateway.js';
import { createLogger } from '../../src/http/log.js';
import type { TestGateway } from '../helpers/gateway.js';
import { type GatewayProcess, startGatewayProcess } from '../helpers/processes.js';
import { createTestDatabase, postgresAvailable } from '../helpers/services.js';
import { OPERATOR, orgWithCluster, runEnded, runScratch } from './harness.js';

/**
 * Several gateway processes share the queue through PostgreSQL: each run is
 * claimed by one worker (`FOR UPDATE SKIP LOCKED`), and the run of a worker
 * that dies fails once its claim's lease has passed.
 */

const hasPostgres = await postgresAvailable();
if (!hasPostgres) console.warn('skipping run workers across processes: they need PostgreSQL');

describe.skipIf(!hasPostgres)('run workers in two gateway processes', () => {
  let database: { url: string; drop(): Promise<void> };
  let scratch: Awaited<ReturnType<typeof runScratch>>;
  let dataDir: string;
  /** An API-only gateway (no workers) in this process, for setting up and asking. */
  let api: RunningGateway;
  const workers: GatewayProcess[] = [];
  const orphans: number[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    scratch = await runScratch();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-workers-'));
    const env = { ...scratch.env, DATABASE_URL: database.url, TOLLGATE_ADMIN_TOKEN: OPERATOR, TOLLGATE_PASSWORD_COST: '10', TOLLGATE_RUN_LEASE_MS: '2000', TOLLGATE_RUN_WORKERS: '2' };
    api = await startGateway(loadConfig({ ...env, PORT: '0', TOLLGATE_HOST: '127.0.0.1', TOLLGATE_DATA_DIR: 'memory://', TOLLGATE_SEED_DEMO: 'false', TOLLGATE_RUN_WORKERS: '0' }), { log: createLogger('silent') });
    for (const name of ['worker-a', 'worker-b']) workers.push(await startGatewayProcess(name, { ...env, TOLLGATE_DATA_DIR: path.join(dataDir, name) }));
  });
  afterAll(async () => {
    for (const worker of workers) await worker.child.stop('SIGTERM');
    for (const pid of orphans) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    await api?.close();
    await database?.drop();
    await scratch?.remove();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('twelve runs queued at once are each applied once, by both processes', async () => {
    const setups: Array<Awaited<ReturnType<typeof orgWithCluster>>> = [];
    for (let i = 0; i < 12; i++) setups.push(await orgWithCluster(api as TestGateway));
    const queued = await Promise.all(setups.map(({ owner, cluster, stackName }) => owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode: 'slow', count: 3 } })));
    expect(queued.map((response) => response.status)).toEqual(Array(12).fill(201));
    const ended = await Promise.all(queued.map((response, i) => runEnded(setups[i]!.owner, response.body.id, 30_000)));
    expect(ended.map((run) => run.state)).toEqual(Array(12).fill('APPLIED'));
    const applies = (await scratch.read()).filter((record) => record.command === 'apply');
    const clusterIds = setups.map((setup) => setup.cluster.id).sort();
    expect(applies.map((record) => record.vars.tollgate_cluster_id).sort()).toEqual(clusterIds);
    // The tool is a child of the gateway process that claimed the run: both took some.
    expect(new Set(applies.map((record) => record.ppid))).toEqual(new Set(workers.map((worker) => worker.child.pid)));
  });

  it('the run of a worker that is killed fails once its claim has expired, on the other worker', async () => {
    const { owner, cluster, stackName } = await orgWithCluster(api as TestGateway);
    const queued = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode: 'hang' } });
    let apply;
    for (let tries = 0; !apply && tries < 200; tries++) {
      apply = (await scratch.read()).find((record) => record.command === 'apply' && record.vars.tollgate_cluster_id === cluster.id);
      if (!apply) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(apply).toBeDefined();
    // The tool runs in a process group of its own: it outlives a SIGKILLed gateway (stopped here at the end).
    orphans.push(apply!.pid);
    const claimant = workers.find((worker) => worker.child.pid === apply!.ppid)!;
    await claimant.child.stop('SIGKILL');
    const killedAt = Date.now();
    const run = await runEnded(owner, queued.body.id, 10_000);
    expect(run).toMatchObject({ state: 'FAILED', failure: expect.stringContaining('The worker applying it stopped') });
    // One lease (2 s) and a poll of the other worker, with room for a loaded machine.
    expect(Date.now() - killedAt).toBeLessThan(6_000);
    workers.splice(workers.indexOf(claimant), 1);
  });
});
