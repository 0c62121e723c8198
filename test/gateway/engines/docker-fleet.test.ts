import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeEngineContainers } from '../../../src/gateway/engines/docker/engine.js';
import { ownContainers } from '../../../src/gateway/engines/docker/spec.js';
import type { EngineStatus } from '../../../src/gateway/engines/types.js';
import { expectError } from '../../helpers/envelope.js';
import { buildSimulatorImage, dockerAvailable } from '../../helpers/docker.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { freePort } from '../../helpers/processes.js';
import { sleep, until } from '../../helpers/wait.js';

const MODEL = 'sim-chat';
/** This test run's deployments: a second one shares the Docker host with the first. */
const DEPLOYMENT = `t${process.pid}a`;
const OTHER_DEPLOYMENT = `t${process.pid}b`;
const available = await dockerAvailable();

/**
 * The fleet on a real Docker engine: replicas of a locally built image of the
 * simulator (it takes vLLM's command line), with host networking, reached on
 * 127.0.0.1 only.
 */
describe.runIf(available)('Docker engine fleet', () => {
  const docker = new Docker();
  let image: string;
  let dir: string;
  let enginesFile: string;
  let gateway: TestGateway;
  let secret: string;

  const ourContainers = () =>
    docker.listContainers({ all: true, filters: { label: ownContainers(DEPLOYMENT, MODEL) } });
  const status = (): EngineStatus => gateway.services.fleet.status().find((e) => e.model === MODEL)!;
  const start = () =>
    startTestGateway('pglite', {
      TOLLGATE_ENGINES_FILE: enginesFile,
      TOLLGATE_ENGINE_POLL_MS: '250',
      TOLLGATE_ENGINES_ON_SHUTDOWN: 'leave',
      TOLLGATE_DEPLOYMENT: DEPLOYMENT,
    });
  const chat = (extra: Record<string, unknown> = {}) =>
    fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'hello' }], ...extra }),
    });

  /**
   * How long to wait for the fleet (up to a minute: containers start), and what to show if it never
   * comes.
   */
  const fleetWait = { timeout: 60_000, interval: 100, detail: () => status() };
  const ready = () => status().replicas.filter((r) => r.state === 'ready').length;

  beforeAll(async () => {
    image = await buildSimulatorImage();
    await removeEngineContainers(docker, MODEL, DEPLOYMENT);
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-fleet-'));
    enginesFile = path.join(dir, 'engines.json');
    // Two consecutive free ports: replica i listens on port + i.
    let port = await freePort();
    while (!(await portFree(port + 1))) port = await freePort();
    const definition = {
      kind: 'docker',
      model: MODEL,
      image,
      entrypoint: ['/usr/local/bin/node', '/app/sim.mjs'],
      hf_repo: 'tollgate/sim-chat',
      served_model_name: MODEL,
      args: ['--itl-ms', '20'],
      replicas: 2,
      port,
      pull: 'never',
      startup_timeout_s: 60,
    };
    await writeFile(enginesFile, JSON.stringify({ engines: [definition] }));
    gateway = await start();
    ({ secret } = await gateway.tenant({ credit: '100', key: { requestsPerMinute: 100_000, maxConcurrency: 1000 } }));
  }, 240_000);

  afterAll(async () => {
    await gateway?.close();
    await removeEngineContainers(docker, MODEL, DEPLOYMENT);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('starts the replicas and routes only once /health answers', async () => {
    await until('two ready replicas', () => ready() === 2, fleetWait);
    const containers = await ourContainers();
    expect(containers.filter((c) => c.State === 'running')).toHaveLength(2);
    expect(
      status()
        .replicas.map((r) => r.container?.name)
        .sort(),
    ).toEqual([`tollgate-${DEPLOYMENT}-${MODEL}-0`, `tollgate-${DEPLOYMENT}-${MODEL}-1`]);
  }, 90_000);

  it('leaves its replicas to it when another deployment starts on the same Docker host', async () => {
    const before = (await ourContainers()).map((c) => c.Id).sort();
    expect(before).toHaveLength(2);
    // Another deployment, whose engines file names another model on the same host (and so, to it,
    // ours is "undefined").
    const otherFile = path.join(dir, 'other-engines.json');
    const port = await freePort();
    await writeFile(
      otherFile,
      JSON.stringify({
        engines: [
          {
            kind: 'docker',
            model: 'sim-other',
            image,
            entrypoint: ['/usr/local/bin/node', '/app/sim.mjs'],
            hf_repo: 'tollgate/sim-other',
            served_model_name: 'sim-other',
            replicas: 1,
            port,
            pull: 'never',
            startup_timeout_s: 60,
          },
        ],
      }),
    );
    const other = await startTestGateway('pglite', {
      TOLLGATE_ENGINES_FILE: otherFile,
      TOLLGATE_ENGINE_POLL_MS: '250',
      TOLLGATE_ENGINES_ON_SHUTDOWN: 'stop',
      TOLLGATE_DEPLOYMENT: OTHER_DEPLOYMENT,
    });
    try {
      const otherReady = () =>
        other.services.fleet
          .status()
          .find((e) => e.model === 'sim-other')!
          .replicas.some((r) => r.state === 'ready');
      await until('the other deployment ready', otherReady, fleetWait);
      // Two more reconcile passes of the other gateway (scaling to the same count runs one at once,
      // after any under way): ours are still the same, running, and serving.
      const otherEngine = other.services.fleet.engines().find((e) => e.modelId === 'sim-other')!;
      for (let pass = 0; pass < 2; pass++) await otherEngine.scale!(1);
      expect(
        (await ourContainers())
          .filter((c) => c.State === 'running')
          .map((c) => c.Id)
          .sort(),
      ).toEqual(before);
      expect(ready()).toBe(2);
    } finally {
      await other.close();
      await removeEngineContainers(docker, 'sim-other', OTHER_DEPLOYMENT);
    }
    // And closing it with `stop` removed only its own containers.
    expect((await ourContainers()).map((c) => c.Id).sort()).toEqual(before);
  }, 120_000);

  it('spreads traffic across the replicas', async () => {
    const before = status().replicas.map((r) => r.served);
    const responses = await Promise.all(Array.from({ length: 16 }, () => chat()));
    expect(responses.map((r) => r.status)).toEqual(Array(16).fill(200));
    await Promise.all(responses.map((r) => r.arrayBuffer()));
    const served = status().replicas.map((r, i) => r.served - (before[i] ?? 0));
    expect(served.every((n) => n >= 4)).toBe(true);
  }, 60_000);

  it('routes around a container killed under load, and replaces it', async () => {
    const victim = status().replicas[0]!.container!.id;
    const load = Array.from({ length: 24 }, async (_, i) => {
      await sleep(i * 15); // the load is spread over about 350 ms, so the kill falls in the middle of it
      const response = await chat();
      await response.arrayBuffer();
      return response.status;
    });
    await until(
      'the victim serves some of the load',
      () => status().replicas.some((r) => r.container?.id === victim && r.inFlight > 0),
      { timeout: 5_000, interval: 5 },
    );
    await docker.getContainer(victim).kill();
    const statuses = await Promise.all(load);
    // No request that had not started streaming failed: JSON answers were retried on the other
    // replica.
    expect(statuses).toEqual(Array(24).fill(200));
    await until(
      'the killed replica replaced and ready',
      () => ready() === 2 && !status().replicas.some((r) => r.container?.id === victim),
      fleetWait,
    );
    expect(status().replicas[0]!.restarts).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('adopts the running containers after a gateway restart instead of starting new ones', async () => {
    await until('two ready replicas', () => ready() === 2, fleetWait);
    const before = (await ourContainers()).map((c) => c.Id).sort();
    await gateway.close();
    gateway = await start();
    ({ secret } = await gateway.tenant({ credit: '100', key: { requestsPerMinute: 100_000, maxConcurrency: 1000 } }));
    await until('two ready replicas after restart', () => ready() === 2, fleetWait);
    expect(
      status()
        .replicas.map((r) => r.container!.id)
        .sort(),
    ).toEqual(before);
    expect((await ourContainers()).map((c) => c.Id).sort()).toEqual(before);
    expect((await chat()).status).toBe(200);
  }, 120_000);

  it('restarts replica by replica, so the model keeps serving', async () => {
    await until('two ready replicas', () => ready() === 2, fleetWait);
    const before = status().replicas.map((r) => r.container!.id);
    const engine = gateway.services.fleet.engines().find((e) => e.modelId === MODEL)!;
    await engine.restart!();
    let fewestReady = 2;
    await until(
      'both replicas replaced and ready',
      () => {
        fewestReady = Math.min(fewestReady, ready());
        const ids = status().replicas.map((r) => r.container?.id);
        return ready() === 2 && ids.every((id) => id && !before.includes(id));
      },
      fleetWait,
    );
    expect(fewestReady).toBeGreaterThanOrEqual(1);
    expect((await chat()).status).toBe(200);
  }, 120_000);

  it('puts a draining replica back in rotation when scaled up again before it is removed', async () => {
    await until('two ready replicas', () => ready() === 2, fleetWait);
    const streams = await Promise.all([
      chat({ stream: true, max_tokens: 60, ignore_eos: true }),
      chat({ stream: true, max_tokens: 60, ignore_eos: true }),
    ]);
    const engine = gateway.services.fleet.engines().find((e) => e.modelId === MODEL)!;
    const kept = status().replicas.find((r) => r.id === `${MODEL}/1`)!.container!.id;
    await engine.scale!(1);
    expect(status().replicas.find((r) => r.id === `${MODEL}/1`)?.state).toBe('draining');
    await engine.scale!(2);
    await until('the same replica ready again', () => ready() === 2, fleetWait);
    expect(status().replicas.find((r) => r.id === `${MODEL}/1`)!.container!.id).toBe(kept);
    for (const body of await Promise.all(streams.map((r) => r.text())))
      expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
  }, 120_000);

  it('drains a replica before removing it when scaled down', async () => {
    await until('two ready replicas', () => ready() === 2, fleetWait);
    // One long stream on each replica (least-loaded routing puts them apart): 100 tokens at 20 ms.
    const streams = await Promise.all([
      chat({ stream: true, max_tokens: 100, ignore_eos: true }),
      chat({ stream: true, max_tokens: 100, ignore_eos: true }),
    ]);
    expect(status().replicas.map((r) => r.inFlight)).toEqual([1, 1]);
    const engine = gateway.services.fleet.engines().find((e) => e.modelId === MODEL)!;
    await engine.scale!(1);
    expect(status().replicas.find((r) => r.id === `${MODEL}/1`)?.state).toBe('draining');
    expect((await ourContainers()).length).toBe(2);
    const bodies = await Promise.all(streams.map((r) => r.text()));
    for (const body of bodies) expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
    await until('the drained replica removed', async () => (await ourContainers()).length === 1, fleetWait);
    expect(status().replicas.map((r) => r.id)).toEqual([`${MODEL}/0`]);
  }, 120_000);

  it('answers 503 with Retry-After when no replica is ready, and reports engines to operators', async () => {
    const engine = gateway.services.fleet.engines().find((e) => e.modelId === MODEL)!;
    await engine.scale!(0);
    await until('no replicas', async () => (await ourContainers()).length === 0, fleetWait);
    const refused = await chat();
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    const text = await refused.clone().text();
    expect(text).not.toMatch(/127\.0\.0\.1|tollgate-sim|docker|container/i);
    await expectError(refused, 503, 'upstream_error', 'upstream_error');

    const scaled = await fetch(`${gateway.url}/admin/v1/engines/${MODEL}/scale`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-operator-token-0123456789', 'content-type': 'application/json' },
      body: JSON.stringify({ replicas: 1 }),
    });
    expect(scaled.status).toBe(200);
    await until('one ready replica', () => ready() === 1, fleetWait);
    const listed = (await (
      await fetch(`${gateway.url}/admin/v1/engines`, {
        headers: { authorization: 'Bearer test-operator-token-0123456789' },
      })
    ).json()) as {
      data: Array<{
        model: string;
        kind: string;
        desired_replicas: number;
        replicas: Array<{ state: string; container: { name: string } }>;
      }>;
    };
    const entry = listed.data.find((e) => e.model === MODEL)!;
    // A fixed `replicas: 2` is min = max = 2; an operator's count stands until the next start.
    expect(entry).toMatchObject({ kind: 'docker', desired_replicas: 1, min_replicas: 2, max_replicas: 2 });
    expect(entry.replicas[0]).toMatchObject({
      state: 'ready',
      container: { name: `tollgate-${DEPLOYMENT}-${MODEL}-0` },
      host: 'unix:///var/run/docker.sock',
      gpus: [],
    });
  }, 120_000);
});

async function portFree(port: number): Promise<boolean> {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
