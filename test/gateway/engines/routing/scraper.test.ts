import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { acquireReplica, engineStatus, startRouting } from '../../../../src/gateway/engines/docker/routing.js';
import type { EngineState, Replica } from '../../../../src/gateway/engines/docker/state.js';
import { LoadScraper } from '../../../../src/gateway/engines/routing/scraper.js';
import type { RoutingSettings } from '../../../../src/config/index.js';
import { startSimulator, type RunningSimulator } from '../../../../src/sim/index.js';
import { createLogger } from '../../../../src/shared/http/log.js';

const sims: RunningSimulator[] = [];
const cleanups: Array<() => void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  await Promise.all(sims.splice(0).map((sim) => sim.close()));
});

async function loadedSim(): Promise<RunningSimulator> {
  const sim = await startSimulator({
    models: [{ name: 'served', task: 'chat' }],
    loaded: { numGpuBlocks: 512, maxNumSeqs: 1, decodeMsPerStep: 20 },
  });
  sims.push(sim);
  return sim;
}

function chat(sim: RunningSimulator, content: string, maxTokens: number): Promise<Response> {
  return fetch(`${sim.url}/v1/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({
      model: 'served',
      messages: [{ role: 'user', content }],
      max_tokens: maxTokens,
      ignore_eos: true,
    }),
  });
}

describe('the metrics scraper', () => {
  it("fills each replica's load from its /metrics, counts sends until the next scrape, and drops a replica that stops answering", async () => {
    const sim = await loadedSim();
    const scraper = new LoadScraper({
      periodMs: 50,
      targets: () => [{ id: 'm/0', url: sim.url, servedModel: 'served' }],
    });
    expect(scraper.loadOf('m/0')).toBeNull();
    const answers = [chat(sim, 'one', 500).catch(() => null), chat(sim, 'two', 500).catch(() => null)];
    await vi.waitFor(
      async () => {
        await scraper.scrapeAll();
        expect(scraper.loadOf('m/0')).toMatchObject({ running: 1, waiting: 1, kvBlocks: 512 });
      },
      { timeout: 5000 },
    );
    expect(scraper.loadOf('m/0')!.kvCacheUsage).toBeGreaterThan(0);
    scraper.noteSent('m/0');
    expect(scraper.sentSinceScrape('m/0')).toBe(1);
    await scraper.scrapeAll();
    expect(scraper.sentSinceScrape('m/0')).toBe(0);
    await sim.close();
    await Promise.all(answers);
    // Its last load goes stale (four periods, at least 2 s) once scrapes fail.
    await vi.waitFor(
      async () => {
        await scraper.scrapeAll();
        expect(scraper.loadOf('m/0')).toBeNull();
      },
      { timeout: 8000, interval: 100 },
    );
  }, 20_000);
});

describe("the scraper's learnt batch size", () => {
  it('is the running count of a queue seen on two scrapes in a row with the KV cache under half full, never of a burst or a full cache', async () => {
    // Issue 67: a cold start's burst (1 running, 4 waiting for one scrape) was learnt as a batch of
    // 1, and a queue behind a full cache (20 running of 128) as a batch of 20: replicas holding a
    // prefix counted as full.
    let figures = { running: 1, waiting: 4, kv: 0.1 };
    const server = http.createServer((_, res) => {
      res.end(
        `vllm:num_requests_running{model_name="served"} ${figures.running}\n` +
          `vllm:num_requests_waiting{model_name="served"} ${figures.waiting}\n` +
          `vllm:kv_cache_usage_perc{model_name="served"} ${figures.kv}\n`,
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => server.close());
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const scraper = new LoadScraper({ periodMs: 1000, targets: () => [{ id: 'm/0', url, servedModel: 'served' }] });
    await scraper.scrapeAll();
    expect(scraper.loadOf('m/0')).toMatchObject({ running: 1, waiting: 4 });
    figures = { running: 20, waiting: 10, kv: 0.99 };
    await scraper.scrapeAll();
    await scraper.scrapeAll();
    expect(scraper.learnedCapacity('m/0')).toBeNull();
    figures = { running: 8, waiting: 3, kv: 0.3 };
    await scraper.scrapeAll();
    expect(scraper.learnedCapacity('m/0')).toBeNull();
    figures = { running: 9, waiting: 1, kv: 0.32 };
    await scraper.scrapeAll();
    expect(scraper.learnedCapacity('m/0')).toBe(8);
  });
});

describe("the Docker engine's replica choice with routing", () => {
  it('scores replicas on their scraped metrics, routes a shared prefix to one replica, and shows each replica its load', async () => {
    const urls = [(await loadedSim()).url, (await loadedSim()).url];
    const replicas = new Map<number, Replica>(
      urls.map((url, index) => [
        index,
        {
          index,
          containerId: `c${index}`,
          name: `c${index}`,
          spec: '',
          url,
          state: 'ready',
          startedAt: Date.now(),
          inFlight: 0,
          served: 0,
          failures: 0,
          host: 'local',
          gpus: [],
        },
      ]),
    );
    const routing: RoutingSettings = {
      policy: 'scored',
      scrapeMs: 50,
      queueWeight: 1,
      kvWeight: 1,
      prefixWeight: 2,
      sessionWeight: 0,
      prefixBlockChars: 64,
      prefixEntries: 1000,
      prefixTtlMs: 60_000,
    };
    const state = {
      definition: { model: 'm', served_model_name: 'served', docker_host: 'unix:///var/run/docker.sock' },
      options: { log: createLogger('warn'), routing },
      replicas,
      replaced: new Map(),
      desired: 2,
      bounds: { min: 2, max: 2 },
      hosts: [{ definition: { docker_host: 'unix:///var/run/docker.sock' } }],
      rotation: 0,
    } as unknown as EngineState;
    startRouting(state);
    cleanups.push(() => state.scraper?.stop());
    await vi.waitFor(() => expect(engineStatus(state).replicas.every((r) => r.load)).toBe(true));

    const system = 'You answer questions about the routing of requests. '.repeat(30);
    const hint = (question: string) => ({
      body: {
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: question },
        ],
      },
    });
    const first = acquireReplica(state, undefined, hint('first'))!;
    first.release();
    expect(first.routing).toMatchObject({ policy: 'scored' });
    const second = acquireReplica(state, undefined, hint('second'))!;
    second.release();
    expect(second.replicaId).toBe(first.replicaId);
    expect(second.routing!.prefixBlocks.matched).toBeGreaterThan(0);
    // An excluded replica (a failover) is never chosen, prefix or not.
    const other = acquireReplica(state, new Set([first.replicaId]), hint('third'))!;
    other.release();
    expect(other.replicaId).not.toBe(first.replicaId);

    expect(engineStatus(state).replicas[0]!.load).toEqual({
      waiting: 0,
      running: 0,
      kvCacheUsage: 0,
      prefixHitRate: null,
    });
  });
});

describe("the scraper's batch size before one is learnt (issue 80)", () => {
  /** A server whose /metrics says `figures` (vLLM's or llama.cpp's), and whose /props may say slots. */
  async function engineSaying(metrics: () => string, props?: unknown) {
    const server = http.createServer((req, res) => {
      if (req.url === '/props' && props !== undefined) res.end(JSON.stringify(props));
      else if (req.url === '/metrics') res.end(metrics());
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => server.close());
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return new LoadScraper({
      periodMs: 1000,
      targets: () => [{ id: 'm/0', url, servedModel: 'served' }],
      probeSlots: 2,
    });
  }

  it('is what the replica runs plus the probe, and no more than it runs while requests wait in it', async () => {
    let figures = { running: 0, waiting: 0 };
    const scraper = await engineSaying(
      () =>
        `vllm:num_requests_running{model_name="served"} ${figures.running}\n` +
        `vllm:num_requests_waiting{model_name="served"} ${figures.waiting}\n` +
        `vllm:kv_cache_usage_perc{model_name="served"} 0.1\n`,
    );
    // Never scraped: unknown, as before flow control.
    expect(scraper.capacityOf('m/0')).toBeNull();
    await scraper.scrapeAll();
    expect(scraper.capacityOf('m/0')).toBe(2);
    figures = { running: 6, waiting: 0 };
    await scraper.scrapeAll();
    expect(scraper.capacityOf('m/0')).toBe(8);
    figures = { running: 8, waiting: 2 };
    await scraper.scrapeAll();
    expect(scraper.capacityOf('m/0')).toBe(8);
    // Seen so twice: learnt, and no longer probed once the queue is gone.
    await scraper.scrapeAll();
    figures = { running: 3, waiting: 0 };
    await scraper.scrapeAll();
    expect(scraper.capacityOf('m/0')).toBe(8);
  });

  it("is a llama.cpp server's total_slots from /props, asked once", async () => {
    const scraper = await engineSaying(() => 'llamacpp:requests_processing 0\nllamacpp:requests_deferred 0\n', {
      default_generation_settings: {},
      total_slots: 4,
    });
    await scraper.scrapeAll();
    expect(scraper.capacityOf('m/0')).toBe(4);
    const silent = await engineSaying(() => 'llamacpp:requests_processing 1\nllamacpp:requests_deferred 0\n', {});
    await silent.scrapeAll();
    expect(silent.capacityOf('m/0')).toBe(3);
  });
});
