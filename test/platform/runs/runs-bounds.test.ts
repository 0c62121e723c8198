import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway } from '../../helpers/gateway.js';
import { skippedWithout } from '../../helpers/skips.js';
import { orgWithCluster, runEnded, runScratch, sandboxKinds } from './harness.js';

/**
 * A run's bounds in each sandbox, each with a gateway of its own settings: the timeout, the CPU
 * time and the disk bound. No worker, no tool and no sandbox are runs-unavailable.test.ts's.
 */
const kinds = await sandboxKinds();
skippedWithout(
  kinds.length === 0 ? 'runs: no run sandbox here (bubblewrap, or a Docker engine; see the line above)' : null,
);

describe.each(kinds)('runs: the timeout, the CPU time and the disk bound ($name sandbox)', (kind) => {
  let scratch: Awaited<ReturnType<typeof runScratch>>;
  beforeAll(async () => {
    scratch = await runScratch();
  });
  afterAll(() => scratch?.remove());

  it('a run past TOLLGATE_RUN_TIMEOUT_SECONDS is stopped and FAILED', async () => {
    const gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      ...scratch.env,
      ...kind.env,
      TOLLGATE_RUN_TIMEOUT_SECONDS: '1',
    });
    try {
      const { owner, cluster, stackName } = await orgWithCluster(gateway);
      const run = await runEnded(
        owner,
        (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode: 'hang' } }))
          .body.id,
      );
      expect(run).toMatchObject({
        state: 'FAILED',
        failure: 'It ran longer than 1 s and was stopped; the cluster may be partly changed.',
      });
      expect(Date.parse(run.finished_at) - Date.parse(run.started_at)).toBeGreaterThanOrEqual(1000);
    } finally {
      await gateway.close();
    }
  });

  it('a busy loop past TOLLGATE_RUN_CPU_SECONDS is stopped and FAILED naming the bound', async () => {
    // The timeout is far off: only the CPU time check can stop a loop that never ends.
    const gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      ...scratch.env,
      ...kind.env,
      TOLLGATE_RUN_CPU_SECONDS: '2',
      TOLLGATE_RUN_TIMEOUT_SECONDS: '120',
    });
    try {
      const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
      const run = await runEnded(
        owner,
        (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode: 'spin' } }))
          .body.id,
        90_000,
      );
      expect(run).toMatchObject({
        state: 'FAILED',
        failure:
          'It went over its CPU time bound (2 s, TOLLGATE_RUN_CPU_SECONDS) and was stopped; the cluster may be partly changed.',
      });
      expect(
        await (
          await fetch(`${gateway.url}/api/v1/runs/${run.id}/log`, {
            headers: { authorization: `Bearer ${users[0]!.key}` },
          })
        ).text(),
      ).toContain('fake: spinning');
      // Stopped once over, not at the end of a minute's spinning.
      expect(Date.parse(run.finished_at) - Date.parse(run.started_at)).toBeLessThan(60_000);
    } finally {
      await gateway.close();
    }
  }, 120_000);

  it('a run that writes past TOLLGATE_RUN_DISK_MB in several smaller files is stopped by the periodic check and FAILED naming the bound', async () => {
    // 4 MiB files against a 16 MiB bound: no file reaches the per-file limit (RLIMIT_FSIZE); only
    // the check of the folder's total can stop the run, which would otherwise never end.
    const gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      ...scratch.env,
      ...kind.env,
      TOLLGATE_RUN_DISK_MB: '16',
      TOLLGATE_RUN_TIMEOUT_SECONDS: '120',
    });
    try {
      const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
      const run = await runEnded(
        owner,
        (
          await owner('POST', `/clusters/${cluster.id}/runs`, {
            stack: stackName,
            inputs: { name: 'x', mode: 'files', count: 40 },
          })
        ).body.id,
        90_000,
      );
      expect(run).toMatchObject({
        state: 'FAILED',
        failure:
          'It went over its disk bound (16 MiB written, TOLLGATE_RUN_DISK_MB) and was stopped; the cluster may be partly changed.',
      });
      const log = await (
        await fetch(`${gateway.url}/api/v1/runs/${run.id}/log`, {
          headers: { authorization: `Bearer ${users[0]!.key}` },
        })
      ).text();
      const written = [...log.matchAll(/fake: wrote file (\d+) of 40/g)].map((match) => Number(match[1]));
      // Four files make the bound; the check runs every 500 ms (five files), so it stops the writer
      // within a few more.
      expect(Math.max(...written)).toBeGreaterThanOrEqual(4);
      expect(Math.max(...written)).toBeLessThan(20);
      expect(log).not.toContain('all files written');
    } finally {
      await gateway.close();
    }
  }, 120_000);

  it('leaves no work folder behind', async () => {
    expect(existsSync(scratch.workDir) ? await readdir(scratch.workDir) : []).toEqual([]);
  });
});
