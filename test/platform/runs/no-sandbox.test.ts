import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { SandboxChooser } from '../../../src/platform/runs/sandbox/choose.js';
import { GatewayError } from '../../../src/shared/http/errors.js';
import { dockerAvailable, dockerSocket } from '../../helpers/docker.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { orgWithCluster, runScratch } from './harness.js';

/**
 * Where no sandbox can be had, applying answers 503 naming
 * TOLLGATE_RUN_SANDBOX and why, and queues nothing: never a weaker sandbox,
 * never none. Driven by settings alone: a PATH without bwrap, a runner
 * image no engine holds, an engine that is not there. The stand-in tool is
 * named by its path, so the tool is found whatever PATH says.
 *
 * One gateway, started before the tests (not in one: a start takes seconds
 * on a busy machine), shows the refusal over HTTP and that nothing is
 * queued; the reasons for each choice of settings are the chooser's, asked
 * directly, which takes milliseconds.
 */

const docker = await dockerAvailable();
const MISSING_IMAGE = 'tollgate-test/no-such-runner:missing';

describe('applying without a sandbox answers 503 naming TOLLGATE_RUN_SANDBOX', () => {
  let scratch: Awaited<ReturnType<typeof runScratch>>;
  let gateway: TestGateway;
  beforeAll(async () => {
    scratch = await runScratch();
    gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      ...scratch.env,
      PATH: '/nonexistent',
      TOLLGATE_RUN_SANDBOX: 'bubblewrap',
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await scratch?.remove();
  });

  /** The 503 the chooser answers with these settings: its Retry-After and its message. */
  async function refusal(
    env: Record<string, string>,
  ): Promise<{ status: number; retryAfter?: string; message: string }> {
    const chooser = new SandboxChooser(loadConfig({ ...scratch.env, ...env }).runs);
    const error = await chooser.require().then(
      () => null,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(GatewayError);
    const refused = error as GatewayError;
    return { status: refused.status, retryAfter: refused.headers?.['Retry-After'], message: refused.message };
  }

  it('bubblewrap without bwrap on PATH: 503 over HTTP, and no run queued', async () => {
    const { owner, cluster, stackName } = await orgWithCluster(gateway);
    const refused = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(refused.body.error.message).toContain('bwrap (Debian package bubblewrap) is not installed');
    expect(refused.body.error.message).toContain('TOLLGATE_RUN_SANDBOX');
    expect((await owner('GET', `/clusters/${cluster.id}/runs`)).body.pagination.total).toBe(0);
  });

  it('auto (the default), when the engine lacks the runner image and bwrap is not on PATH: both reasons, and never none', async () => {
    const answer = await refusal({
      PATH: '/nonexistent',
      TOLLGATE_RUN_IMAGE: MISSING_IMAGE,
      TOLLGATE_RUN_DOCKER_HOST: `unix://${dockerSocket}`,
    });
    expect(answer).toMatchObject({ status: 503, retryAfter: '60' });
    expect(answer.message).toContain('neither sandbox is available');
    expect(answer.message).toContain(
      docker ? `the runner image ${MISSING_IMAGE} is not on the Docker engine` : 'does not answer',
    );
    expect(answer.message).toContain('bwrap (Debian package bubblewrap) is not installed');
    expect(answer.message).toContain('TOLLGATE_RUN_SANDBOX');
  });

  it('auto (the default), when no engine answers and bwrap is not on PATH', async () => {
    const answer = await refusal({ PATH: '/nonexistent', TOLLGATE_RUN_DOCKER_HOST: 'unix:///nonexistent/docker.sock' });
    expect(answer).toMatchObject({ status: 503, retryAfter: '60' });
    expect(answer.message).toContain('the Docker engine at unix:///nonexistent/docker.sock does not answer');
    expect(answer.message).toContain('bwrap (Debian package bubblewrap) is not installed');
    expect(answer.message).toContain('TOLLGATE_RUN_SANDBOX');
  });

  it.skipIf(!docker)(
    'docker, when the engine lacks the runner image: 503 even where bubblewrap would work',
    async () => {
      // PATH as it is: bubblewrap works here (the run tests use it), and docker must not fall back
      // to it.
      const answer = await refusal({
        TOLLGATE_RUN_SANDBOX: 'docker',
        TOLLGATE_RUN_IMAGE: MISSING_IMAGE,
        TOLLGATE_RUN_DOCKER_HOST: `unix://${dockerSocket}`,
      });
      expect(answer).toMatchObject({ status: 503, retryAfter: '60' });
      expect(answer.message).toContain(
        `the runner image ${MISSING_IMAGE} is not on the Docker engine at unix://${dockerSocket}`,
      );
      expect(answer.message).toContain('TOLLGATE_RUN_IMAGE');
      expect(answer.message).toContain('TOLLGATE_RUN_SANDBOX');
      expect(answer.message).not.toContain('bubblewrap:');
    },
  );
});
