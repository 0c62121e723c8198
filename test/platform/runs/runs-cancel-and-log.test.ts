import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { readSse } from '../../helpers/sse.js';
import { skippedWithout } from '../../helpers/skips.js';
import { until } from '../../helpers/wait.js';
import { orgWithCluster, runCases, runEnded, runSandboxExists, runScratch } from './harness.js';

/**
 * A run's cancels and its log: one active run per cluster and stack, cancel signalling the tool
 * (even one that ignores SIGINT) and waiting for it, the log followed live, secrets masked in it.
 * Each sandbox and each store here, paired (`runCases`).
 */
const cases = await runCases();
skippedWithout(
  cases.length === 0
    ? 'runs: cancels and the log: no run sandbox here (bubblewrap, or a Docker engine; see the line above)'
    : null,
);

describe.each(cases)('runs: cancels and the log ($store, $kind.name sandbox)', ({ kind, store }) => {
  let gateway: TestGateway;
  let scratch: Awaited<ReturnType<typeof runScratch>>;

  beforeAll(async () => {
    scratch = await runScratch();
    gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10', ...scratch.env, ...kind.env });
  });
  afterAll(async () => {
    await gateway?.close();
    await scratch?.remove();
  });

  it('one active run per cluster and stack (409); another stack or cluster goes ahead; the next run once it ended', async () => {
    const { owner, cluster, stackName } = await orgWithCluster(gateway);
    const hanging = await owner('POST', `/clusters/${cluster.id}/runs`, {
      stack: stackName,
      inputs: { name: 'x', mode: 'hang' },
    });
    const second = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'y' } });
    expect(second.status).toBe(409);
    expect(second.body.error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining(hanging.body.id) });
    const other = await orgWithCluster(gateway, { stackName: `${stackName}-b` });
    expect(
      (
        await other.owner('POST', `/clusters/${other.cluster.id}/runs`, {
          stack: other.stackName,
          inputs: { name: 'z' },
        })
      ).status,
    ).toBe(201);
    expect((await owner('POST', `/runs/${hanging.body.id}/cancel`)).status).toBe(200);
    const third = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'y' } });
    expect(third.status).toBe(201);
    expect((await runEnded(owner, third.body.id)).state).toBe('APPLIED');
  });

  it('cancel signals the tool and waits for it: CANCELED, the process gone, even one that ignores SIGINT', async () => {
    const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
    for (const mode of ['hang', 'hang-hard']) {
      const queued = await owner('POST', `/clusters/${cluster.id}/runs`, {
        stack: stackName,
        inputs: { name: 'x', mode },
      });
      await until(`the ${mode} apply has started`, async () =>
        (await scratch.read()).some(
          (r) => r.command === 'apply' && r.vars.tollgate_cluster_id === cluster.id && r.vars.mode === mode,
        ),
      );
      await until('the run logs that it never finishes', async () =>
        (await textLog(users[0]!.key, queued.body.id)).includes('never finishing'),
      );
      expect(await runSandboxExists(kind.name, queued.body.id)).toBe(true);
      const canceled = await owner('POST', `/runs/${queued.body.id}/cancel`);
      expect(canceled.status).toBe(200);
      expect(canceled.body).toMatchObject({
        state: 'CANCELED',
        failure: 'Canceled while it ran; the cluster may be partly changed.',
      });
      // Every process of the run is gone: its cgroup is removed only once it is empty; its
      // container is removed.
      expect(await runSandboxExists(kind.name, queued.body.id)).toBe(false);
      if (mode === 'hang') expect(await textLog(users[0]!.key, queued.body.id)).toContain('Interrupt received');
      expect((await owner('POST', `/runs/${queued.body.id}/cancel`)).status).toBe(409);
    }
  });

  it('the log is followed live as server-sent events, and ends with the run', async () => {
    const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
    const queued = await owner('POST', `/clusters/${cluster.id}/runs`, {
      stack: stackName,
      inputs: { name: 'x', mode: 'slow', count: 10 },
    });
    const response = await fetch(`${gateway.url}/api/v1/runs/${queued.body.id}/log?follow=true`, {
      headers: { authorization: `Bearer ${users[0]!.key}` },
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = await readSse(response);
    const logEvents = events.filter((event) => event.event === 'log');
    // Live: the pieces came one after another as the tool printed (10 lines, 100 ms apart), not
    // as one at the end.
    expect(logEvents.length).toBeGreaterThan(3);
    expect(logEvents.map((event) => Number(event.id))).toEqual(logEvents.map((_, index) => index));
    const followed = logEvents.map((event) => event.data).join('\n');
    for (let i = 1; i <= 10; i++) expect(followed).toContain(`fake: step ${i} of 10`);
    expect(events.at(-1)).toEqual({ event: 'end', data: JSON.stringify({ state: 'APPLIED' }) });
    // Following an ended run gives the whole log and the end at once.
    const again = await readSse(
      await fetch(`${gateway.url}/api/v1/runs/${queued.body.id}/log?follow=true`, {
        headers: { authorization: `Bearer ${users[0]!.key}` },
      }),
    );
    expect(
      again
        .filter((event) => event.event === 'log')
        .map((event) => event.data)
        .join('\n'),
    ).toBe(followed);
  });

  it("secrets are masked in the log: the cluster's private key and sensitive inputs", async () => {
    const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
    const run = await runEnded(
      owner,
      (
        await owner('POST', `/clusters/${cluster.id}/runs`, {
          stack: stackName,
          inputs: { name: 'x', mode: 'leak', password: 'hunter2-very-secret' },
        })
      ).body.id,
    );
    expect(run.state).toBe('APPLIED');
    const log = await textLog(users[0]!.key, run.id);
    expect(log).toContain('the password is ********');
    expect(log).not.toContain('hunter2-very-secret');
    // The key was printed (its lines are there, masked), and none of its lines is left.
    expect(log).toMatch(/\*{8}\n(\*{8}\n)+/);
    expect(log).not.toContain('OPENSSH PRIVATE KEY');
    const keyBody = log.split('\n').filter((line) => /^[A-Za-z0-9+/=]{40,}$/.test(line.trim()));
    expect(keyBody).toEqual([]);
    expect(log).toContain('********');
  });

  it('masks a short sensitive input too (five characters), in the stored log', async () => {
    const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
    const run = await runEnded(
      owner,
      (
        await owner('POST', `/clusters/${cluster.id}/runs`, {
          stack: stackName,
          inputs: { name: 'x', mode: 'leak', password: 'q7v9k' },
        })
      ).body.id,
    );
    expect(run.state).toBe('APPLIED');
    const log = await textLog(users[0]!.key, run.id);
    expect(log).toContain('the password is ********\n');
    expect(log).not.toContain('q7v9k');
  });

  async function textLog(key: string, runId: string): Promise<string> {
    const response = await fetch(`${gateway.url}/api/v1/runs/${runId}/log`, {
      headers: { authorization: `Bearer ${key}` },
    });
    return response.text();
  }
});
