import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBuilt } from '../../../bench/processes.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { freePort, repoRoot, type TestChild, waitForHealth } from '../../helpers/processes.js';
import { until } from '../../helpers/wait.js';

/**
 * Issue 51: on 4 loaded simulator replicas behind the gateway's scored router,
 * agents that all share one long system prompt and RAG users whose prompts
 * share nothing run at once; the agents' mean time to first token stays within
 * 2x the RAG users'. Prefix affinity would pile every agent on the replica
 * that holds the system prompt (its two running slots full, the rest queued)
 * while the others idle; affinity yielding to load (TOLLGATE_ROUTING_AFFINITY_SLACK)
 * spreads them. Measured when this was written: 135 ms for the agents against
 * 159 ms for the RAG users (48 requests split 9/14/11/14); with the slack set
 * to 1000 (affinity never yields), 519 ms against 162 ms, 32 of the 48 on one
 * replica, and this test fails.
 */

const REPLICAS = 4;
const AGENTS = 8;
const RAG_USERS = 4;
const ROUNDS = 4;
const MAX_TOKENS = 16;
// A loaded vLLM with a small running batch, so a replica given more than two requests queues them.
const LOADED_SIM = ['--max-num-seqs', '2', '--prefill-ms-per-token', '0.05', '--decode-ms-per-step', '10'];

const SYSTEM_PROMPT = `You are a coding agent working in a large repository. ${'Follow the rules of the house. '.repeat(120)}`;

const agentMessages = (agent: number, round: number) => [
  { role: 'system', content: SYSTEM_PROMPT },
  { role: 'user', content: `Agent ${agent}, step ${round}: list the files that changed.` },
];
// A document of its own per request: no prefix shared with any other.
const ragMessages = (user: number, round: number) => [
  {
    role: 'user',
    content: `Document ${user}.${round}: ${Array.from({ length: 300 }, (_, i) => `fact ${user * 1000 + round * 17 + i}`).join(', ')}. What does it say?`,
  },
];

const sims: TestChild[] = [];
let gateway: TestGateway;
let dir: string;

beforeAll(async () => {
  const urls: string[] = [];
  await Promise.all(
    Array.from({ length: REPLICAS }, async (_, i) => {
      const port = await freePort();
      const child = startBuilt(
        `sim-mixed-${i}`,
        'dist/sim/main.js',
        ['sim-chat', '--host', '127.0.0.1', '--port', String(port), '--max-model-len', '16384', ...LOADED_SIM],
        { cwd: repoRoot, env: process.env },
      );
      sims.push(child);
      await waitForHealth(child, `http://127.0.0.1:${port}/health`);
      urls.push(`http://127.0.0.1:${port}/v1`);
    }),
  );
  dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-mixed-load-'));
  const file = path.join(dir, 'engines.json');
  await writeFile(file, JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', engine: 'vllm', urls }] }));
  gateway = await startTestGateway('pglite', {
    TOLLGATE_ENGINES_FILE: file,
    TOLLGATE_ROUTING_POLICY: 'scored',
    TOLLGATE_ROUTING_SCRAPE_MS: '100',
    TOLLGATE_ENGINE_POLL_MS: '200',
  });
  // Four simulators and a gateway each start in seconds, but on a loaded machine in up to a minute.
}, 180_000);
afterAll(async () => {
  await gateway?.close();
  await Promise.all(sims.map((child) => child.stop('SIGTERM')));
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * Milliseconds from sending a streamed chat request to the first chunk with content; reads the
 * stream to its end.
 */
async function timeToFirstToken(secret: string, messages: unknown): Promise<number> {
  let started = performance.now();
  const send = () =>
    fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', messages, max_tokens: MAX_TOKENS, stream: true }),
      // A bound of its own, so a request that hangs says so rather than the test's timeout.
      signal: AbortSignal.timeout(60_000),
    });
  let response: Response;
  try {
    response = await send();
  } catch (error) {
    // A connection lost before any answer (`fetch failed`: a keep-alive connection the gateway
    // closed as it was reused, a connect that a stalled event loop timed out) is sent again once,
    // as the openai client does; its time is the new attempt's. What it was is kept to be shown.
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    if ((error as Error).name !== 'TypeError' || !cause) throw error;
    connectionRetries.push(cause.code ?? cause.message ?? 'no code');
    started = performance.now();
    response = await send();
  }
  expect(response.status).toBe(200);
  const decoder = new TextDecoder();
  let text = '';
  let firstToken: number | null = null;
  for await (const bytes of response.body!) {
    text += decoder.decode(bytes, { stream: true });
    if (firstToken === null && /"delta":\{[^}]*"content":"[^"]/.test(text)) firstToken = performance.now() - started;
  }
  expect(firstToken, 'a chunk with content').not.toBeNull();
  return firstToken!;
}

/** The causes of the connections lost before an answer and sent again. */
const connectionRetries: string[] = [];

const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

describe('a mixed load of RAG users and agents sharing one system prompt, on 4 replicas', () => {
  it("keeps the agents' mean time to first token within 2x the RAG users'", async () => {
    const replicas = () => gateway.services.fleet.status()[0]!.replicas;
    await until(
      'every replica is ready and scraped',
      () => replicas().length === REPLICAS && replicas().every((r) => r.state === 'ready' && r.load),
      { detail: () => gateway.services.fleet.status() },
    );
    // One key for every user, allowed them all at once.
    const { secret } = await gateway.tenant({ key: { maxConcurrency: AGENTS + RAG_USERS, requestsPerMinute: 1000 } });
    const agentTimes: number[] = [];
    const ragTimes: number[] = [];
    // Each user sends its requests one after another (a closed loop), all users at once.
    const user = async (times: number[], messagesOf: (round: number) => unknown) => {
      for (let round = 0; round < ROUNDS; round++) times.push(await timeToFirstToken(secret, messagesOf(round)));
    };
    await Promise.all([
      ...Array.from({ length: AGENTS }, (_, a) => user(agentTimes, (round) => agentMessages(a, round))),
      ...Array.from({ length: RAG_USERS }, (_, u) => user(ragTimes, (round) => ragMessages(u, round))),
    ]);
    const served = Object.fromEntries(replicas().map((r) => [r.address, r.served]));
    const figures = `agents' mean TTFT ${mean(agentTimes).toFixed(0)} ms, RAG users' ${mean(ragTimes).toFixed(0)} ms, served ${JSON.stringify(served)}, connections sent again ${JSON.stringify(connectionRetries)}`;
    expect(agentTimes).toHaveLength(AGENTS * ROUNDS);
    expect(ragTimes).toHaveLength(RAG_USERS * ROUNDS);
    console.log(figures);
    // Sending again is for a rare lost connection, not a way of life: at most one request in eight.
    expect(connectionRetries.length, figures).toBeLessThanOrEqual(((AGENTS + RAG_USERS) * ROUNDS) / 8);
    expect(mean(agentTimes), figures).toBeLessThanOrEqual(2 * mean(ragTimes));
    // 48 streams through four queues of two take seconds, on a loaded machine up to a minute.
  }, 120_000);
});
