import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway } from '../../helpers/gateway.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { skippedWithout } from '../../helpers/skips.js';
import { orgWithCluster, runEnded, runScratch, sandboxKinds } from './harness.js';

/**
 * Runs where something is not there, each with a gateway of its own settings, once (no sandbox
 * takes part: the tool is looked for before anything is queued, a run no worker claimed never
 * reaches one, and TOLLGATE_RUN_SANDBOX=none is no sandbox): no worker, no tool, no sandbox.
 */
const kinds = await sandboxKinds();
skippedWithout(
  kinds.length === 0 ? 'runs: no run sandbox here (bubblewrap, or a Docker engine; see the line above)' : null,
);

describe.skipIf(kinds.length === 0)('runs: no worker, no tool, no sandbox', () => {
  const kind = kinds[0]!;
  let scratch: Awaited<ReturnType<typeof runScratch>>;
  beforeAll(async () => {
    scratch = await runScratch();
  });
  afterAll(() => scratch?.remove());

  it('with no worker here a run stays QUEUED, and canceling it ends it at once', async () => {
    const gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      ...scratch.env,
      ...kind.env,
      TOLLGATE_RUN_WORKERS: '0',
    });
    try {
      const { owner, cluster, stackName } = await orgWithCluster(gateway);
      const queued = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } });
      // Queueing pokes this process's worker, which would claim the run in that pass. Stopping the
      // worker waits for any pass under way and ends a run it took (FAILED), so a run still QUEUED
      // after it was taken by no worker here.
      await gateway.services.runWorker.stop();
      expect((await owner('GET', `/runs/${queued.body.id}`)).body.state).toBe('QUEUED');
      const canceled = await owner('POST', `/runs/${queued.body.id}/cancel`);
      expect(canceled.body).toMatchObject({
        state: 'CANCELED',
        failure: 'Canceled before it started.',
        started_at: null,
      });
    } finally {
      await gateway.close();
    }
  });

  it('without OpenTofu or Terraform, applying answers 503 naming the setting, and nothing is queued', async () => {
    const gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      ...scratch.env,
      ...kind.env,
      TOLLGATE_TOFU_BIN: path.join(scratch.workDir, 'no-such-tofu'),
    });
    try {
      const { owner, cluster, stackName } = await orgWithCluster(gateway);
      const refused = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } });
      expect(refused.status).toBe(503);
      expect(refused.body.error).toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
        message: expect.stringContaining('TOLLGATE_TOFU_BIN'),
      });
      expect((await owner('GET', `/clusters/${cluster.id}/runs`)).body.pagination.total).toBe(0);
    } finally {
      await gateway.close();
    }
  });

  it("TOLLGATE_RUN_SANDBOX=none runs unsandboxed only when set, warns at every start and says so in each run's log", async () => {
    const lines: string[] = [];
    const gateway = await startTestGateway(
      'pglite',
      {
        TOLLGATE_PASSWORD_COST: '10',
        ...scratch.env,
        TOLLGATE_RUN_SANDBOX: 'none',
        FAKE_TOFU_RECORDS: scratch.records,
      },
      { log: createLogger('warn', (line) => lines.push(line)) },
    );
    try {
      expect(
        lines.some((line) => JSON.parse(line).message.startsWith('TOLLGATE_RUN_SANDBOX=none: stacks run unsandboxed')),
      ).toBe(true);
      const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
      const run = await runEnded(
        owner,
        (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } })).body.id,
      );
      expect(run.state).toBe('APPLIED');
      const log = await (
        await fetch(`${gateway.url}/api/v1/runs/${run.id}/log`, {
          headers: { authorization: `Bearer ${users[0]!.key}` },
        })
      ).text();
      expect(log).toContain('This run is not sandboxed (TOLLGATE_RUN_SANDBOX=none)');
      // The tool ran on the host: its folder is the host's.
      const apply = (await scratch.read()).find(
        (record) => record.command === 'apply' && record.vars.tollgate_cluster_id === cluster.id,
      )!;
      expect(apply.cwd.startsWith(scratch.workDir)).toBe(true);
    } finally {
      await gateway.close();
    }
  });

  it('leaves no work folder behind', async () => {
    expect(existsSync(scratch.workDir) ? await readdir(scratch.workDir) : []).toEqual([]);
  });
});
