import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BLIND_CGROUP } from '../../../src/platform/runs/sandbox/docker.js';
import { type GatewayProcess, startGatewayProcess } from '../../helpers/processes.js';
import { requireServices } from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';
import { zipOf } from '../../helpers/zip.js';
import {
  dockerSandboxAvailable,
  FAKE_MODULE,
  OPERATOR,
  operatorCall,
  profileWithNodes,
  runEnded,
  runScratch,
} from './harness.js';
import { apiAs } from '../../surfaces/api/harness.js';
import type { TestGateway } from '../../helpers/gateway.js';

/**
 * The docker sandbox of a gateway that cannot read its run containers'
 * cgroups, as a gateway in a container of its own cannot: here a gateway
 * process in a PID namespace of its own (`unshare --pid --mount-proc`,
 * which takes root). Its runs still apply, but the CPU time bound cannot be
 * enforced nor the process bound named: the gateway's log says so once, and
 * every run's log says so.
 */

const docker = await dockerSandboxAvailable();
const root = process.getuid?.() === 0;
if (docker && !root) {
  if (requireServices)
    throw new Error('REQUIRE_SERVICES=1 but the blind docker sandbox test needs root (unshare --pid)');
  console.warn('skipping the blind docker sandbox test: unshare --pid needs root');
}

describe.skipIf(!docker || !root)(
  "the docker sandbox of a gateway that cannot read the run containers' cgroups",
  () => {
    let scratch: Awaited<ReturnType<typeof runScratch>>;
    let dataDir: string;
    let gateway: GatewayProcess;

    beforeAll(async () => {
      scratch = await runScratch();
      dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-blind-data-'));
      // --kill-child: should this test die, the gateway goes with its wrapper.
      gateway = await startGatewayProcess(
        'blind-gateway',
        {
          ...scratch.env,
          ...docker!.env,
          TOLLGATE_DATA_DIR: dataDir,
          TOLLGATE_ADMIN_TOKEN: OPERATOR,
          TOLLGATE_PASSWORD_COST: '10',
        },
        { wrapper: ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child'] },
      );
    }, 60_000);

    afterAll(async () => {
      if (gateway) {
        // The gateway is the wrapper's child: it gets the SIGTERM (a graceful stop), and the
        // wrapper ends with it.
        const children = await readFile(`/proc/${gateway.child.pid}/task/${gateway.child.pid}/children`, 'utf8').catch(
          () => '',
        );
        for (const pid of children.split(' ').filter(Boolean)) process.kill(Number(pid), 'SIGTERM');
        await until('the gateway in its own PID namespace has stopped', () => gateway.child.exited(), {
          timeout: 15_000,
        }).catch(() => gateway.child.stop('SIGKILL'));
      }
      await scratch?.remove();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    });

    it("applies, and says in the gateway's log once and in every run's log that CPU time is not enforced", async () => {
      const org = await operatorCall(gateway, 'POST', '/orgs', { name: 'blind org' });
      const owner = await operatorCall(gateway, 'POST', `/orgs/${org.body.id}/users`, {
        name: 'Olive',
        email: 'olive@example.com',
        password: 'correct horse battery',
        role: 'owner',
      });
      const key: string = (
        await operatorCall(gateway, 'POST', `/orgs/${org.body.id}/keys`, { name: 'olive', user_id: owner.body.id })
      ).body.secret;
      const call = apiAs(gateway as unknown as TestGateway, key);
      const profile = await profileWithNodes(gateway, 1);
      const cluster = await call('POST', '/clusters', {
        name: 'lab',
        profile,
        nodes: 1,
        public_domain: `${profile}.example.test`,
      });
      expect(cluster.status).toBe(201);
      const form = new FormData();
      form.set(
        'package',
        new Blob([new Uint8Array(await zipOf({ 'blind/main.tf': FAKE_MODULE }))], { type: 'application/zip' }),
        'blind.zip',
      );
      expect(
        (
          await fetch(`${gateway.url}/api/v1/stacks`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}` },
            body: form,
          })
        ).status,
      ).toBe(201);

      for (const name of ['first', 'second']) {
        const run = await runEnded(
          call,
          (await call('POST', `/clusters/${cluster.body.id}/runs`, { stack: 'blind', inputs: { name } })).body.id,
          60_000,
        );
        expect(run.state).toBe('APPLIED');
        const log = await (
          await fetch(`${gateway.url}/api/v1/runs/${run.id}/log`, { headers: { authorization: `Bearer ${key}` } })
        ).text();
        expect(log).toContain(`[tollgate] Warning: ${BLIND_CGROUP}`);
      }
      // Once in the gateway's own log, when it set the sandbox up (the first apply's probe), not
      // once per run.
      const warnings = gateway.child
        .output()
        .split('\n')
        .filter((line) => line.includes('run sandbox: the gateway cannot read'));
      expect(warnings).toHaveLength(1);
      expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 'warn', message: `run sandbox: ${BLIND_CGROUP}` });
    }, 120_000);
  },
);
