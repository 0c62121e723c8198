import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { skippedWithout } from '../../helpers/skips.js';
import { orgWithCluster, runEnded, runScratch, sandboxKinds } from './harness.js';

/**
 * A run's egress socket lives in a short folder of its own: however deep
 * TOLLGATE_RUN_DIR is (here past the 108 bytes a socket's path may have),
 * runs apply, in each sandbox.
 */

const kinds = await sandboxKinds();
skippedWithout(
  kinds.length === 0 ? 'a deep TOLLGATE_RUN_DIR: no run sandbox here (bubblewrap, or a Docker engine)' : null,
);

describe.each(kinds)('a deep TOLLGATE_RUN_DIR ($name)', (kind) => {
  let gateway: TestGateway;
  let scratch: Awaited<ReturnType<typeof runScratch>>;

  beforeAll(async () => {
    scratch = await runScratch();
    const deep = path.join(scratch.workDir, ...Array.from({ length: 8 }, (_, i) => `a-rather-long-folder-name-${i}`));
    await mkdir(deep, { recursive: true });
    // Each folder on the way traversable, as the sandbox's user must pass through them.
    for (let folder = deep; folder.startsWith(scratch.workDir); folder = path.dirname(folder))
      await chmod(folder, 0o711);
    expect(Buffer.byteLength(deep)).toBeGreaterThan(200);
    gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      ...scratch.env,
      ...kind.env,
      TOLLGATE_RUN_DIR: deep,
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await scratch?.remove();
  });

  it('a run applies', async () => {
    const { owner, cluster, stackName } = await orgWithCluster(gateway);
    const queued = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } });
    expect(queued.status).toBe(201);
    const run = await runEnded(owner, queued.body.id, 30_000);
    expect(run.state, run.failure).toBe('APPLIED');
  }, 45_000);
});
