import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeEngineContainers } from '../../../src/gateway/engines/docker/engine.js';
import { ownContainers } from '../../../src/gateway/engines/docker/spec.js';
import type { EngineStatus } from '../../../src/gateway/engines/types.js';
import { pricePerTokenFromMillion } from '../../../src/gateway/billing/money.js';
import { expectError } from '../../helpers/envelope.js';
import { buildSimulatorImage, dockerAvailable, freePortRange, SIM_IMAGE_COMMAND } from '../../helpers/docker.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';

const MODEL = 'sim-chat';
const COLD = 'sim-reasoner';
const BROKEN = 'sim-broken';
const DEPLOYMENT = `t${process.pid}s`;
const available = await dockerAvailable();

/**
 * Autoscaling on a real Docker engine, with replicas of the simulator image:
 * short windows and cooldowns through the definition's `autoscaling` fields.
 * The replicas are loaded vLLMs (a running batch of 2, a waiting queue
 * beyond it), and the gateway scrapes their `/metrics` as it does in
 * production (TOLLGATE_ROUTING_*): the autoscaler scales on the
 * `vllm:num_requests_waiting` they report.
 */
describe.runIf(available)('Docker engine autoscaling', () => {
  const docker = new Docker();
  let dir: string;
  let gateway: TestGateway;
  let secret: string;

  const status = (model: string): EngineStatus => gateway.services.fleet.status().find((e) => e.model === model)!;
  const containers = (model: string) =>
    docker.listContainers({ all: true, filters: { label: ownContainers(DEPLOYMENT, model) } });
  const ready = (model: string) => status(model).replicas.filter((r) => r.state === 'ready').length;
  const chat = async (model: string, extra: Record<string, unknown> = {}) => {
    const response = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        max_tokens: 25,
        ignore_eos: true,
        messages: [{ role: 'user', content: 'hello' }],
        ...extra,
      }),
    });
    return response;
  };

  // A wait that times out shows the fleet as the gateway sees it.
  const fleet = (timeout = 60_000) => ({ timeout, interval: 100, detail: () => gateway.services.fleet.status() });

  beforeAll(async () => {
    const image = await buildSimulatorImage();
    for (const model of [MODEL, COLD, BROKEN]) await removeEngineContainers(docker, model, DEPLOYMENT);
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-autoscale-'));
    const enginesFile = path.join(dir, 'engines.json');
    const engine = async (model: string, fields: Record<string, unknown>) => ({
      kind: 'docker',
      model,
      image,
      entrypoint: [...SIM_IMAGE_COMMAND],
      hf_repo: `tollgate/${model}`,
      served_model_name: model,
      // A loaded vLLM: at most 2 sequences running, the rest waiting; a decode step of 20 ms (25
      // tokens in about 0.5 s).
      args: ['--num-gpu-blocks-override', '512', '--max-num-seqs', '2', '--decode-ms-per-step', '20'],
      port: await freePortRange(3),
      pull: 'never',
      startup_timeout_s: 60,
      ...fields,
    });
    const fast = {
      waiting_per_replica: 1,
      window_s: 1,
      idle_cooldown_s: 2,
      capacity_per_replica: 2,
      cold_start_wait_s: 30,
    };
    const engines = [
      await engine(MODEL, { min_replicas: 1, max_replicas: 3, autoscaling: fast }),
      await engine(COLD, { min_replicas: 0, max_replicas: 1, autoscaling: fast }),
      // Never becomes ready (the process exits at once): a cold start that cannot succeed.
      await engine(BROKEN, {
        min_replicas: 0,
        max_replicas: 1,
        entrypoint: [SIM_IMAGE_COMMAND[0], '-e', 'process.exit(1)'],
        autoscaling: { ...fast, cold_start_wait_s: 1 },
      }),
    ];
    await writeFile(enginesFile, JSON.stringify({ engines }));
    gateway = await startTestGateway('pglite', {
      TOLLGATE_ENGINES_FILE: enginesFile,
      TOLLGATE_ENGINE_POLL_MS: '250',
      TOLLGATE_DEPLOYMENT: DEPLOYMENT,
      TOLLGATE_ENGINES_ON_SHUTDOWN: 'stop',
    });
    await gateway.services.catalog.add({
      id: BROKEN,
      displayName: 'Sim Broken',
      hfRepoId: 'tollgate-test/Sim-Broken',
      taskType: 'chat',
      contextLength: 8192,
      enabled: true,
    });
    await gateway.services.catalog.setPrice(BROKEN, pricePerTokenFromMillion('0.1'), pricePerTokenFromMillion('0.1'));
    ({ secret } = await gateway.tenant({ credit: '100', key: { requestsPerMinute: 100_000, maxConcurrency: 1000 } }));
  }, 240_000);

  afterAll(async () => {
    await gateway?.close();
    for (const model of [MODEL, COLD, BROKEN]) await removeEngineContainers(docker, model, DEPLOYMENT);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('scales from 1 to 3 replicas under a queue, and back to 1 after the cooldown, failing no request', async () => {
    await until('one ready replica', () => ready(MODEL) === 1, fleet());
    expect(status(MODEL)).toMatchObject({ desiredReplicas: 1, minReplicas: 1, maxReplicas: 3 });
    let loading = true;
    let most = 0;
    const statuses: number[] = [];
    // Twelve clients at once: on one replica that takes two at a time, ten wait.
    const clients = Array.from({ length: 12 }, async () => {
      while (loading) {
        const response = await chat(MODEL);
        await response.arrayBuffer();
        statuses.push(response.status);
      }
    });
    try {
      await until(
        'three ready replicas under load',
        () => {
          most = Math.max(most, status(MODEL).desiredReplicas);
          return ready(MODEL) === 3;
        },
        fleet(90_000),
      );
    } finally {
      loading = false;
      await Promise.all(clients);
    }
    expect(most).toBe(3);
    expect((await containers(MODEL)).filter((c) => c.State === 'running')).toHaveLength(3);
    await until(
      'back to one replica after the cooldown',
      async () => status(MODEL).desiredReplicas === 1 && (await containers(MODEL)).length === 1,
      fleet(),
    );
    expect(status(MODEL).replicas.map((r) => r.id)).toEqual([`${MODEL}/0`]);
    expect(statuses.length).toBeGreaterThan(12);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
  }, 180_000);

  it('starts a replica for the first request of an engine scaled to zero, which waits for it, and scales to zero again', async () => {
    expect(status(COLD)).toMatchObject({ desiredReplicas: 0, minReplicas: 0, replicas: [] });
    expect(await containers(COLD)).toHaveLength(0);
    const response = await chat(COLD);
    expect(response.status).toBe(200);
    expect(((await response.json()) as { model: string }).model).toBe(COLD);
    expect((await containers(COLD)).length).toBe(1);
    await until(
      'scaled to zero after the cooldown',
      async () => status(COLD).desiredReplicas === 0 && (await containers(COLD)).length === 0,
      fleet(),
    );
  }, 90_000);

  it('answers 503 with Retry-After when no replica starts within the cold-start wait', async () => {
    const response = await chat(BROKEN);
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    const text = await response.clone().text();
    expect(text).not.toMatch(/127\.0\.0\.1|tollgate-|docker|container/i);
    await expectError(response, 503, 'upstream_error', 'upstream_error');
  }, 30_000);
});
