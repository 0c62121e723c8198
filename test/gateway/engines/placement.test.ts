import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DockerDefinition } from '../../../src/gateway/engines/docker-definition.js';
import { parseEngineDefinitions } from '../../../src/gateway/engines/definitions.js';
import { removeEngineContainers, startDockerEngine } from '../../../src/gateway/engines/docker/engine.js';
import { ownContainers } from '../../../src/gateway/engines/docker/spec.js';
import type { Engine } from '../../../src/gateway/engines/types.js';
import type { Logger } from '../../../src/shared/http/log.js';
import {
  buildSimulatorImage,
  dockerAvailable,
  dockerSocket,
  freePortRange,
  SIM_IMAGE_COMMAND,
  testDocker,
} from '../../helpers/docker.js';
import { secondDockerdPossible, startSecondDockerd, type SecondDockerd } from '../../helpers/dockerd.js';

const MODEL = 'sim-placed';
const DEPLOYMENT = `t${process.pid}p`;
const FIRST = `unix://${dockerSocket}`;
const available = (await dockerAvailable()) && (await secondDockerdPossible());

/**
 * Placement over two real Docker engines (the machine's and a second
 * `dockerd` the test starts), each declaring GPU ids. There is no GPU here:
 * the hosts say `gpu_runtime: none`, so the placed ids are labelled on the
 * containers and not asked of a runtime (docker-request.test.ts checks the
 * DeviceRequests a `nvidia` host gets). What is checked is read back from
 * the containers themselves.
 */
describe.runIf(available)('placement across Docker hosts and GPUs', () => {
  const docker = testDocker();
  let second: SecondDockerd | undefined;
  let engine: Engine | undefined;
  const logged: string[] = [];

  /** Replica index → GPU ids, and what Docker was asked for, from each container's inspect. */
  async function placed(on: Docker): Promise<Array<{ replica: string; gpus: string; devices: unknown[] }>> {
    const listed = await on.listContainers({ filters: { label: ownContainers(DEPLOYMENT, MODEL) } });
    const inspected = await Promise.all(listed.map((c) => on.getContainer(c.Id).inspect()));
    return inspected
      .map((c) => ({
        replica: c.Config.Labels['tollgate.replica']!,
        gpus: c.Config.Labels['tollgate.gpus']!,
        devices: c.HostConfig.DeviceRequests ?? [],
      }))
      .sort((a, b) => a.replica.localeCompare(b.replica));
  }
  const readyOn = (host: string) =>
    engine!.status().replicas.filter((r) => r.state === 'ready' && r.host === host).length;

  beforeAll(async () => {
    const image = await buildSimulatorImage();
    await removeEngineContainers(docker, MODEL, DEPLOYMENT);
    second = await startSecondDockerd(docker, [image]);
    const [definition] = parseEngineDefinitions(
      JSON.stringify({
        engines: [
          {
            kind: 'docker',
            model: MODEL,
            image,
            entrypoint: [...SIM_IMAGE_COMMAND],
            hf_repo: 'tollgate/sim-placed',
            port: await freePortRange(4),
            pull: 'never',
            startup_timeout_s: 60,
            replicas: 3,
            gpus: 1,
            hosts: [
              { docker_host: FIRST, gpus: ['0', '1', '2'], gpu_runtime: 'none' },
              { docker_host: second.host, gpus: ['0', '1'], gpu_runtime: 'none' },
            ],
          },
        ],
      }),
    );
    const log: Logger = {
      debug: () => {},
      info: () => {},
      warn: (message) => logged.push(message),
      error: (message) => logged.push(message),
    };
    const dockerFor = (host: { docker_host: string }) => (host.docker_host === FIRST ? docker : second!.docker);
    engine = await startDockerEngine(definition as DockerDefinition, {
      docker,
      dockerFor,
      log,
      env: {},
      pollMs: 250,
      deployment: DEPLOYMENT,
      listTimeoutMs: 1_000,
    });
  }, 240_000);

  afterAll(async () => {
    await engine?.close();
    await removeEngineContainers(docker, MODEL, DEPLOYMENT);
    await second?.stop();
  }, 60_000);

  it('places replicas on distinct GPUs, spread across both engines', async () => {
    await expect.poll(() => [readyOn(FIRST), readyOn(second!.host)], { timeout: 60_000 }).toEqual([2, 1]);
    // Spread: the second replica goes to the host with none; the third to the one with more GPUs
    // free.
    expect(await placed(docker)).toEqual([
      { replica: '0', gpus: '0', devices: [] },
      { replica: '2', gpus: '1', devices: [] },
    ]);
    expect(await placed(second!.docker)).toEqual([{ replica: '1', gpus: '0', devices: [] }]);
    expect(engine!.status().replicas.map((r) => [r.id, r.host, r.gpus])).toEqual([
      [`${MODEL}/0`, FIRST, ['0']],
      [`${MODEL}/1`, second!.host, ['0']],
      [`${MODEL}/2`, FIRST, ['1']],
    ]);
  }, 90_000);

  it('places the replica of an engine that stops answering on the other, on a GPU still free, and removes its copy when it answers again', async () => {
    // The host is cut off: its daemon stops answering, and its replica is gone (killed here, or its
    // port would be taken on this one machine).
    const [cutOff] = await second!.docker.listContainers({ filters: { label: ownContainers(DEPLOYMENT, MODEL) } });
    const pid = (await second!.docker.getContainer(cutOff!.Id).inspect()).State.Pid;
    second!.pause();
    process.kill(pid, 'SIGKILL');
    // Three listings that time out (1 s each here) and the host is down.
    await expect.poll(() => readyOn(FIRST), { timeout: 60_000, interval: 250 }).toBe(3);
    expect(logged).toContain('engine host not answering; its replica will be placed elsewhere');
    expect(await placed(docker)).toEqual([
      { replica: '0', gpus: '0', devices: [] },
      { replica: '1', gpus: '2', devices: [] },
      { replica: '2', gpus: '1', devices: [] },
    ]);
    expect(engine!.status().replicas.map((r) => [r.id, r.host, r.gpus])).toEqual([
      [`${MODEL}/0`, FIRST, ['0']],
      [`${MODEL}/1`, FIRST, ['2']],
      [`${MODEL}/2`, FIRST, ['1']],
    ]);
    // Back: the copy it still lists is not wanted (replica 1 runs elsewhere) and is removed.
    second!.resume();
    await expect
      .poll(
        async () =>
          (await second!.docker.listContainers({ all: true, filters: { label: ownContainers(DEPLOYMENT, MODEL) } }))
            .length,
        { timeout: 30_000 },
      )
      .toBe(0);
    expect(readyOn(FIRST)).toBe(3);
  }, 150_000);

  it('forgets the replicas of an engine that is stopped; with no GPU free elsewhere, they wait', async () => {
    await engine!.scale!(4);
    // The fourth goes to the second engine, the one with GPUs free; then that engine stops, and the
    // replica has nowhere to go.
    await expect.poll(() => readyOn(second!.host), { timeout: 60_000 }).toBe(1);
    expect(await placed(second!.docker)).toEqual([{ replica: '3', gpus: '0', devices: [] }]);
    await second!.stop();
    await expect.poll(() => engine!.status().replicas.length, { timeout: 60_000 }).toBe(3);
  }, 90_000);

  it('never puts two replicas on one GPU: with every GPU taken, a fourth replica waits', async () => {
    await expect
      .poll(() => logged.includes('engine replica has no host to go to: none answering with enough GPUs free'), {
        timeout: 30_000,
      })
      .toBe(true);
    expect((await placed(docker)).map((p) => p.gpus).sort()).toEqual(['0', '1', '2']);
    expect(engine!.status().replicas).toHaveLength(3);
  }, 60_000);
});
