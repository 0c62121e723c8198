import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startBuilt } from '../../../bench/processes.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { freePort, repoRoot, type TestChild, waitForHealth } from '../../helpers/processes.js';
import { until } from '../../helpers/wait.js';

/**
 * Issue 80: flow control on the defaults an operator runs. One loaded simulator of 4 sequences,
 * listed by URL with its batch size not declared unless a case says so; organization A floods it
 * with streams that all last far longer than the test (so they end together, if ever), and what is
 * counted is where requests wait: in the engine's own queue (its `num_requests_waiting`) or in the
 * gateway, and whether B's request starts while every slot is A's.
 */

let dir: string;
const started: Array<{ stop(): Promise<void> }> = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-undeclared-'));
});
afterEach(async () => {
  for (const thing of started.splice(0).reverse()) await thing.stop();
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A simulator of 4 sequences (`priority`: scheduling by priority) and a gateway in front of it. */
async function fleet(options: { priority?: boolean; declared?: boolean; env?: Record<string, string> } = {}) {
  const port = await freePort();
  const args = ['sim-chat', '--host', '127.0.0.1', '--port', String(port), '--max-num-seqs', '4'];
  args.push('--decode-ms-per-step', '10', ...(options.priority ? ['--scheduling-policy', 'priority'] : []));
  const sim: TestChild = startBuilt('sim-undeclared', 'dist/sim/main.js', args, { cwd: repoRoot, env: process.env });
  started.push({ stop: () => sim.stop('SIGTERM') });
  await waitForHealth(sim, `http://127.0.0.1:${port}/health`);
  const engine = {
    kind: 'static',
    model: 'sim-chat',
    engine: 'vllm',
    urls: [`http://127.0.0.1:${port}/v1`],
    ...(options.declared ? { max_num_seqs: 4 } : {}),
    ...(options.priority ? { scheduling_policy: 'priority' } : {}),
  };
  const file = path.join(dir, `engines-${port}.json`);
  await writeFile(file, JSON.stringify({ engines: [engine] }));
  const gateway: TestGateway = await startTestGateway('pglite', {
    TOLLGATE_ENGINES_FILE: file,
    TOLLGATE_ENGINE_POLL_MS: '200',
    TOLLGATE_ROUTING_SCRAPE_MS: '100',
    ...options.env,
  });
  started.push({ stop: () => gateway.close() });
  await until('the replica is ready', () => gateway.services.fleet.status()[0]!.replicas[0]?.state === 'ready');
  const engineFigure = async (name: string) => {
    const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
    return Number(new RegExp(`^vllm:${name}\\{[^}]*\\} ([\\d.]+)`, 'm').exec(text)![1]);
  };
  return { gateway, engineFigure };
}

/** One stream that is read until `stop`: its status, and whether its first content came. */
function openStream(gateway: TestGateway, secret: string, maxTokens: number) {
  const abort = new AbortController();
  const state = { status: 0, firstToken: false, ended: false };
  const done = fetch(`${gateway.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'Go on.' }],
      max_tokens: maxTokens,
      ignore_eos: true,
      stream: true,
    }),
    signal: abort.signal,
  })
    .then(async (response) => {
      state.status = response.status;
      const decoder = new TextDecoder();
      for await (const bytes of response.body!)
        if (decoder.decode(bytes).includes('"content":"')) state.firstToken = true;
      state.ended = true;
    })
    .catch(() => {});
  started.push({ stop: () => (abort.abort(), done) });
  return state;
}

const key = { maxConcurrency: 100, requestsPerMinute: 10_000 } as const;

describe('a flood on an engine whose batch size nobody declared', () => {
  it("waits in the gateway, not in the engine's own queue", async () => {
    const { gateway, engineFigure } = await fleet();
    const a = await gateway.tenant({ key });
    const flood = Array.from({ length: 30 }, () => openStream(gateway, a.secret, 3000));
    let mostWaiting = 0;
    await until(
      'the engine runs its batch and the rest of the flood waits in the gateway',
      async () => {
        mostWaiting = Math.max(mostWaiting, await engineFigure('num_requests_waiting'));
        return (await engineFigure('num_requests_running')) === 4 && gateway.services.flow.waiting(a.orgId) >= 20;
      },
      {
        timeout: 30_000,
        detail: () => ({ mostWaiting, inGateway: gateway.services.flow.waiting(a.orgId) }),
      },
    );
    // Once the batch size is learnt, nothing more goes to the engine: its queue holds the probe's
    // few (TOLLGATE_ROUTING_PROBE_SLOTS, 2; a scrape's lag may add as many) from the moment the
    // flood began, not the flood's 26.
    for (let i = 0; i < 10; i++) mostWaiting = Math.max(mostWaiting, await engineFigure('num_requests_waiting'));
    expect(mostWaiting).toBeLessThanOrEqual(4);
    expect(flood.filter((s) => s.ended)).toHaveLength(0);
  }, 60_000);

  it('refuses at the wait bound what it kept, and queues no more in the engine than the probe', async () => {
    const { gateway, engineFigure } = await fleet({ env: { TOLLGATE_FLOW_MAX_WAIT_MS: '1000' } });
    const a = await gateway.tenant({ key });
    const flood = Array.from({ length: 16 }, () => openStream(gateway, a.secret, 3000));
    const unanswered = () => flood.filter((s) => !s.firstToken && s.status !== 503);
    // Every request either runs or is refused, but for those the engine itself queued.
    const settled = () => unanswered().length <= 2 && gateway.services.flow.waiting() === 0;
    await until('every request runs or is refused, but for a probe', settled, {
      timeout: 30_000,
      detail: () => ({ unanswered: unanswered().length }),
    });
    expect(flood.filter((s) => s.firstToken)).toHaveLength(4);
    expect(await engineFigure('num_requests_waiting')).toBe(unanswered().length);
  }, 60_000);
});

describe("another organization's request while a flood that ends in lockstep holds every slot", () => {
  it('reaches the engine ahead of the flood where the engine schedules by priority', async () => {
    const { gateway, engineFigure } = await fleet({ priority: true });
    const a = await gateway.tenant({ key });
    const b = await gateway.tenant({ key });
    const flood = Array.from({ length: 8 }, () => openStream(gateway, a.secret, 3000));
    await until('every slot is A`s and A waits', async () => {
      return (await engineFigure('num_requests_running')) === 4 && gateway.services.flow.waiting(a.orgId) > 0;
    });
    const answer = openStream(gateway, b.secret, 5);
    await until("B's answer ends", () => answer.ended, { timeout: 20_000 });
    expect(answer.status).toBe(200);
    // Not one of A's streams ended: B did not wait for a slot to free.
    expect(flood.filter((s) => s.ended)).toHaveLength(0);
    expect(await engineFigure('num_preemptions_total')).toBeGreaterThan(0);
  }, 60_000);

  it('takes the slot the flood leaves where a stream runs to its end', async () => {
    const { gateway, engineFigure } = await fleet({ declared: true });
    const a = await gateway.tenant({ key });
    const b = await gateway.tenant({ key });
    // B asked a moment ago (organizations mix: a lone one would have every slot).
    const earlier = openStream(gateway, b.secret, 5);
    await until("B's earlier answer ends", () => earlier.ended, { timeout: 20_000 });
    const flood = Array.from({ length: 8 }, () => openStream(gateway, a.secret, 3000));
    await until('A runs all but one slot and waits', async () => {
      return (await engineFigure('num_requests_running')) === 3 && gateway.services.flow.waiting(a.orgId) === 5;
    });
    for (let i = 0; i < 2; i++) {
      const answer = openStream(gateway, b.secret, 5);
      await until("B's answer ends", () => answer.ended, { timeout: 20_000 });
      expect(answer.status).toBe(200);
    }
    expect(flood.filter((s) => s.ended)).toHaveLength(0);
    expect(gateway.services.flow.waiting(a.orgId)).toBe(5);
  }, 60_000);
});
