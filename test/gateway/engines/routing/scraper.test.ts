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
