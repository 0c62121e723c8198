import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBuilt } from '../../../bench/processes.js';
import type { StaticDefinition } from '../../../src/gateway/engines/definitions.js';
import { startServersEngine } from '../../../src/gateway/engines/servers.js';
import type { RoutingSettings } from '../../../src/config/fleet-types.js';
import type { Engine } from '../../../src/gateway/engines/types.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { freePort, repoRoot, type TestChild, waitForHealth } from '../../helpers/processes.js';
import { until } from '../../helpers/wait.js';

/**
 * The operator's own vLLM servers as one engine's replicas: three simulator
 * processes on three loopback addresses, behind one DNS name (a resolver the
 * test controls, injected as the engine's lookup) and as a list of URLs in
 * engines.json. Each gets readiness, scraped metrics, scores, prefix
 * affinity and failover, as the gateway's Docker replicas do.
 */

const ADDRESSES = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];
const ROUTING: RoutingSettings = {
  policy: 'scored',
  scrapeMs: 100,
  queueWeight: 1,
  kvWeight: 1,
  prefixWeight: 4,
  sessionWeight: 0.5,
  prefixBlockChars: 64,
  prefixEntries: 1000,
  prefixTtlMs: 60_000,
};
const DNS_REFRESH_MS = 300;

let port: number;
const sims = new Map<string, TestChild>();

async function startSim(address: string): Promise<void> {
  const child = startBuilt(
    `sim-${address}`,
    'dist/sim/main.js',
    ['sim-chat', '--host', address, '--port', String(port)],
    { cwd: repoRoot, env: process.env },
  );
  sims.set(address, child);
  await waitForHealth(child, `http://${address}:${port}/health`);
}

beforeAll(async () => {
  // One port on every address: a DNS name gives addresses, the port is the engine's.
  port = await freePort();
  await Promise.all(ADDRESSES.map(startSim));
}, 60_000);
afterAll(async () => {
  await Promise.all([...sims.values()].map((child) => child.stop('SIGTERM')));
});

const chatBody = (n: number) => ({
  model: 'sim-chat',
  messages: [{ role: 'user', content: `Question ${n}: ${'why is the sky blue? '.repeat(8)}` }],
  max_tokens: 8,
});

describe('an engine behind a DNS name', () => {
  let engine: Engine;
  let answer: string[] = [...ADDRESSES];
  const definition: StaticDefinition = {
    kind: 'static',
    model: 'sim-chat',
    dns: { name: 'vllm.ml.svc.cluster.local', port: 8000, scheme: 'http' },
  };

  beforeAll(async () => {
    const lookup = async (name: string) => {
      expect(name).toBe('vllm.ml.svc.cluster.local');
      return [...answer];
    };
    engine = await startServersEngine(
      { ...definition, dns: { ...definition.dns!, port } },
      { env: {}, log: createLogger('silent'), pollMs: 100, dnsRefreshMs: DNS_REFRESH_MS, routing: ROUTING, lookup },
    );
  });
  afterAll(async () => {
    await engine?.close();
  });

  const replicas = () => engine.status().replicas;
  const send = async (n: number) => {
    const body = chatBody(n);
    const target = engine.acquire(undefined, { body });
    expect(target).not.toBeNull();
    try {
      const response = await fetch(`${target!.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(200);
      await response.text();
    } finally {
      target!.release();
    }
    return target!;
  };

  it('spreads requests over every address, scored on what each reports', async () => {
    await until(
      'every address is ready and scraped',
      () => replicas().length === 3 && replicas().every((r) => r.state === 'ready' && r.load),
    );
    const targets = [];
    for (let n = 0; n < 30; n++) targets.push(await send(n));
    const chosen = new Set(targets.map((t) => t.replicaId));
    expect([...chosen].sort()).toEqual(ADDRESSES.map((address) => `sim-chat/${address}:${port}`));
    const scored = targets.find((t) => t.routing?.policy === 'scored');
    expect(scored, 'a scored choice').toBeDefined();
    expect(Object.keys(scored!.routing!.scores).sort()).toEqual([...chosen].sort());
  });

  it('keeps a prompt on the replica that holds its prefix', async () => {
    const first = await send(1000);
    const again = await send(1000);
    expect(again.replicaId).toBe(first.replicaId);
    expect(again.routing?.prefixBlocks.matched).toBeGreaterThan(0);
  });

  it('drops an address the name no longer gives within a period, and uses one that is added', async () => {
    const gone = `sim-chat/${ADDRESSES[2]}:${port}`;
    answer = ADDRESSES.slice(0, 2);
    const removedAt = Date.now();
    await until('the removed address is dropped', () => !replicas().some((r) => r.id === gone), { timeout: 5_000 });
    expect(Date.now() - removedAt).toBeLessThan(DNS_REFRESH_MS * 2 + 500);
    for (let n = 0; n < 10; n++) expect((await send(2000 + n)).replicaId).not.toBe(gone);
    answer = [...ADDRESSES];
    await until('the added address is ready', () => replicas().find((r) => r.id === gone)?.state === 'ready', {
      timeout: 5_000,
    });
    // Three calls held at once: with every replica idle the router breaks ties by calls in flight,
    // so the third goes to the replica no call holds yet; the added one must be among them, and
    // answer.
    let n = 3000;
    const added = await until('the added address is chosen', () => {
      const held = [0, 1, 2].map(() => engine.acquire(undefined, { body: chatBody(n++) })!);
      for (const target of held) target.release();
      return held.find((target) => target.replicaId === gone);
    });
    const response = await fetch(`${added.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chatBody(n)),
    });
    expect(response.status).toBe(200);
    await response.text();
  });
});

describe('an engine with a list of URLs, in a gateway', () => {
  let gateway: TestGateway;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-servers-'));
    const file = path.join(dir, 'engines.json');
    await writeFile(
      file,
      JSON.stringify({
        engines: [
          { kind: 'static', model: 'sim-chat', urls: ADDRESSES.map((address) => `http://${address}:${port}/v1`) },
        ],
      }),
    );
    gateway = await startTestGateway('pglite', {
      TOLLGATE_ENGINES_FILE: file,
      TOLLGATE_ROUTING_SCRAPE_MS: '100',
      TOLLGATE_ENGINE_POLL_MS: '200',
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const served = () =>
    Object.fromEntries(gateway.services.fleet.status()[0]!.replicas.map((r) => [r.address, r.served]));

  it('serves from all three, and fails over when one stops', async () => {
    const { secret } = await gateway.tenant();
    const chat = async (n: number) => {
      const response = await fetch(`${gateway.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(chatBody(n)),
      });
      await response.text();
      return response.status;
    };
    // Scored: every server's /metrics is read, so the router has a load for each.
    await until(
      'every server is ready and scraped',
      () => gateway.services.fleet.status()[0]!.replicas.every((r) => r.state === 'ready' && r.load),
      {
        detail: () => gateway.services.fleet.status(),
      },
    );
    for (let n = 0; n < 15; n++) expect(await chat(n)).toBe(200);
    expect(Object.keys(served()).sort()).toEqual(ADDRESSES.map((address) => `${address}:${port}`));
    expect(
      Object.values(served()).every((count) => count > 0),
      JSON.stringify(served()),
    ).toBe(true);
    // A replica that stops: requests go on to the others, and it leaves rotation.
    await sims.get(ADDRESSES[1]!)!.stop('SIGKILL');
    for (let n = 100; n < 110; n++) expect(await chat(n)).toBe(200);
    await until(
      'the stopped server is out of rotation',
      () =>
        gateway.services.fleet.status()[0]!.replicas.find((r) => r.address === `${ADDRESSES[1]}:${port}`)?.state ===
        'unhealthy',
    );
  });
});
