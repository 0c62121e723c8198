import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { startGateway, type RunningGateway } from '../../../src/server/start.js';
import { createLogger } from '../../../src/shared/http/log.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';
import { OPERATOR, orgWithCluster, runScratch, sandboxAvailable } from './harness.js';

/**
 * A run never stays RUNNING: an outcome holding text PostgreSQL refuses (a
 * NUL in an output or the failure) is stored escaped, and a claim a process
 * holds but no longer applies (its outcome could not be recorded) expires
 * like a dead process's, on that same process's next look. Against
 * PostgreSQL, with the worker's own calls.
 */

const ready = (await postgresAvailable()) && (await sandboxAvailable());
if (!ready) console.warn('skipping the run claim tests: they need PostgreSQL and the run sandbox');

describe.skipIf(!ready)("a run's outcome and its claim", () => {
  let database: { url: string; drop(): Promise<void> };
  let scratch: Awaited<ReturnType<typeof runScratch>>;
  let api: RunningGateway;

  beforeAll(async () => {
    database = await createTestDatabase();
    scratch = await runScratch();
    const env = {
      ...scratch.env,
      DATABASE_URL: database.url,
      TOLLGATE_ADMIN_TOKEN: OPERATOR,
      TOLLGATE_PASSWORD_COST: '10',
      TOLLGATE_RUN_SANDBOX: 'bubblewrap',
    };
    // No workers: the test is the worker.
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
  });
  afterAll(async () => {
    await api?.close();
    await database?.drop();
    await scratch?.remove();
  });

  async function claimedRun() {
    const { owner, cluster, stackName } = await orgWithCluster(api as TestGateway);
    const queued = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } });
    expect(queued.status).toBe(201);
    const claimed = await api.services.runs.claims.claim('worker-self', 1000);
    expect(claimed?.id).toBe(queued.body.id);
    return { owner, id: queued.body.id as string };
  }

  it('an outcome with a NUL in an output and in the failure is stored, escaped', async () => {
    const { owner, id } = await claimedRun();
    const recorded = await api.services.runs.claims.finish('worker-self', id, {
      state: 'FAILED',
      exitCode: 1,
      failure: 'bad\u0000end',
      outputs: { 'k\u0000': 'a\u0000b' },
      publicUrl: null,
      webTarget: null,
    });
    expect(recorded).toBe(true);
    const run = (await owner('GET', `/runs/${id}`)).body;
    expect(run).toMatchObject({ state: 'FAILED', failure: 'bad\\u0000end', outputs: { 'k\\u0000': 'a\\u0000b' } });
    await api.services.runs.appendLog(id, null, 'log \u0000 line\n');
    expect((await api.services.runs.readLog(id)).at(-1)?.data).toBe('log \\u0000 line\n');
  });

  it('a process expires its own stale claim on a run it no longer applies', async () => {
    const { owner, id } = await claimedRun();
    await until(
      'the claim has expired',
      async () => (await api.services.runs.claims.failAbandoned('worker-self', ['run_other'])).includes(id),
      { timeout: 5000, interval: 200 },
    );
    expect((await owner('GET', `/runs/${id}`)).body).toMatchObject({
      state: 'FAILED',
      failure: expect.stringContaining('its claim expired'),
    });
  });
});
