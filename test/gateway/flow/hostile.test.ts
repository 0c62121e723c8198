import Anthropic from '@anthropic-ai/sdk';
import { eq } from 'drizzle-orm';
import { setMaxListeners } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBuilt } from '../../../bench/processes.js';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { freePort, repoRoot, type TestChild, waitForHealth } from '../../helpers/processes.js';
import { until } from '../../helpers/wait.js';

/**
 * Issue 67's hostile tenants at the fleet's queue: one replica that runs one
 * sequence at a time, kept busy by a long stream, so every other request has
 * to wait in the gateway.
 */

let sim: TestChild;
let dir: string;
let simUrl: string;

beforeAll(async () => {
  const port = await freePort();
  sim = startBuilt(
    'sim-hostile-flow',
    'dist/sim/main.js',
    ['sim-chat', '--host', '127.0.0.1', '--port', String(port), '--max-num-seqs', '1', '--decode-ms-per-step', '10'],
    { cwd: repoRoot, env: process.env },
  );
  await waitForHealth(sim, `http://127.0.0.1:${port}/health`);
  simUrl = `http://127.0.0.1:${port}/v1`;
  dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-flow-hostile-'));
}, 60_000);

afterAll(async () => {
  await sim?.stop('SIGTERM');
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function gatewayWith(env: Record<string, string>): Promise<TestGateway> {
  const file = path.join(dir, `engines-${Math.random().toString(36).slice(2)}.json`);
  const engine = { kind: 'static', model: 'sim-chat', engine: 'vllm', urls: [simUrl], max_num_seqs: 1 };
  await writeFile(file, JSON.stringify({ engines: [engine] }));
  const gateway = await startTestGateway('pglite', {
    TOLLGATE_ENGINES_FILE: file,
    TOLLGATE_ENGINE_POLL_MS: '200',
    ...env,
  });
  await until('the replica is ready', () => gateway.services.fleet.status()[0]!.replicas[0]?.state === 'ready');
  return gateway;
}

function chat(gateway: TestGateway, secret: string, body: Record<string, unknown>, init: RequestInit = {}) {
  return fetch(`${gateway.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', ...init.headers },
    body: JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }], ...body }),
    signal: init.signal,
  });
}

/** A stream that holds the replica's one sequence until `stop` is called. */
async function occupy(gateway: TestGateway, secret: string) {
  const abort = new AbortController();
  const response = await chat(
    gateway,
    secret,
    { max_tokens: 3000, ignore_eos: true, stream: true },
    { signal: abort.signal },
  );
  expect(response.status).toBe(200);
  const reading = (async () => {
    for await (const _ of response.body!) void _;
  })().catch(() => {});
  return async () => {
    abort.abort();
    await reading;
  };
}

async function recordsOf(gateway: TestGateway, orgId: string) {
  return gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, orgId));
}

describe('hostile tenants at the fleet queue', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await gatewayWith({ TOLLGATE_FLOW_QUEUE_PER_ORG: '3', TOLLGATE_FLOW_MAX_WAIT_MS: '400' });
  }, 60_000);
  afterAll(async () => gateway?.close());

  it("refuses a band above the key's, and takes a lower one", async () => {
    const { secret } = await gateway.tenant();
    const refused = await chat(gateway, secret, { max_tokens: 2 }, { headers: { 'x-tollgate-band': 'interactive' } });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/default band or a lower/);
    const unknown = await chat(gateway, secret, { max_tokens: 2 }, { headers: { 'x-tollgate-band': 'urgent' } });
    expect(unknown.status).toBe(400);
    const lower = await chat(gateway, secret, { max_tokens: 2 }, { headers: { 'x-tollgate-band': 'batch' } });
    expect(lower.status).toBe(200);
  });

  it('refuses at once when the organization queue is full: 503 overloaded naming the setting, nothing billed, the hold back', async () => {
    const holder = await gateway.tenant({ key: { maxConcurrency: 100 } });
    const stop = await occupy(gateway, holder.secret);
    const flood = await gateway.tenant({ key: { maxConcurrency: 100, requestsPerMinute: 1000 } });
    const balance = await gateway.services.wallets.balance(flood.orgId);
    const waiting = [1, 2, 3].map(() => chat(gateway, flood.secret, { max_tokens: 2 }));
    await until('three requests wait', () => gateway.services.flow.waiting(flood.orgId) === 3);
    const refused = await chat(gateway, flood.secret, { max_tokens: 2 });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBeTruthy();
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('overloaded');
    expect(body.error.message).toMatch(/TOLLGATE_FLOW_QUEUE_PER_ORG=3/);
    // The three that waited give up after TOLLGATE_FLOW_MAX_WAIT_MS, refused the same way.
    for (const answer of await Promise.all(waiting)) expect(answer.status).toBe(503);
    await stop();
    await gateway.charged(10_000);
    expect(await recordsOf(gateway, flood.orgId)).toEqual([]);
    expect(await gateway.services.wallets.balance(flood.orgId)).toBe(balance);
    expect((await gateway.services.gateKeeper.gate.walletState(flood.orgId)).holds).toEqual([]);
  });

  it('answers /v1/messages with 529 overloaded_error, which the Anthropic SDK retries until it succeeds', async () => {
    const holder = await gateway.tenant({ key: { maxConcurrency: 100 } });
    const client = await gateway.tenant();
    const statuses: number[] = [];
    const anthropic = new Anthropic({
      apiKey: client.secret,
      baseURL: gateway.url,
      maxRetries: 8,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        statuses.push(response.status);
        return response;
      },
    });
    // The replica is busy for about 1.2 s: longer than the 400 ms a request may wait.
    const busy = chat(gateway, holder.secret, { max_tokens: 120, ignore_eos: true });
    await until('the replica is busy', () => gateway.services.flow.snapshot().models[0]?.inFlight === 1);
    const message = await anthropic.messages.create({
      model: 'sim-chat',
      max_tokens: 4,
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(message.type).toBe('message');
    expect(statuses[0]).toBe(529);
    expect(statuses.at(-1)).toBe(200);
    expect((await busy).status).toBe(200);
  });

  it("answers 529 at once while the organization's queue is full; the SDK retries into room and one charge is made", async () => {
    const holder = await gateway.tenant({ key: { maxConcurrency: 100 } });
    const stop = await occupy(gateway, holder.secret);
    const org = await gateway.tenant({ key: { maxConcurrency: 100, requestsPerMinute: 1000 } });
    const sdkKey = await gateway.services.keys.create({ orgId: org.orgId, name: 'sdk', maxConcurrency: 10 });
    const balance = await gateway.services.wallets.balance(org.orgId);
    // The organization's other key fills its queue (TOLLGATE_FLOW_QUEUE_PER_ORG=3); they give up
    // after 400 ms.
    const waiting = [1, 2, 3].map(() => chat(gateway, org.secret, { max_tokens: 2 }));
    await until('three requests wait', () => gateway.services.flow.waiting(org.orgId) === 3);
    const answers: Array<{ status: number; body: string }> = [];
    const anthropic = new Anthropic({
      apiKey: sdkKey.secret,
      baseURL: gateway.url,
      maxRetries: 8,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        answers.push({ status: response.status, body: await response.clone().text() });
        // Room appears once the SDK has been refused and the queue has given up: the replica's one
        // sequence is freed.
        if (response.status === 529) void Promise.all(waiting).then(stop);
        return response;
      },
    });
    const message = await anthropic.messages.create({
      model: 'sim-chat',
      max_tokens: 4,
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(message.type).toBe('message');
    expect(answers[0]!.status).toBe(529);
    expect(JSON.parse(answers[0]!.body)).toMatchObject({
      type: 'error',
      error: { type: 'overloaded_error', message: expect.stringMatching(/TOLLGATE_FLOW_QUEUE_PER_ORG=3/) },
    });
    expect(answers.at(-1)!.status).toBe(200);
    for (const answer of await Promise.all(waiting)) expect(answer.status).toBe(503);
    await stop();
    await gateway.charged(10_000);
    // One record, the success's, at the engine's count; the refused tries and the queue's give-ups
    // cost nothing.
    const records = await recordsOf(gateway, org.orgId);
    const prompt = message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0);
    const cost = BigInt(prompt) * 150n + BigInt(message.usage.output_tokens) * 600n;
    expect(records.map((r) => [r.keyId, r.endpoint, r.status, r.promptTokens, r.completionTokens, r.cost])).toEqual([
      [sdkKey.key.id, 'messages', 200, prompt, message.usage.output_tokens, cost],
    ]);
    expect(await gateway.services.wallets.balance(org.orgId)).toBe(balance - cost);
    const charges = (await gateway.services.wallets.ledger(org.orgId)).filter((entry) => entry.kind === 'charge');
    expect(charges.map((entry) => [entry.requestId, entry.amount])).toEqual([[records[0]!.id, -cost]]);
  });
});

const QUEUED = 2000;

describe('a client that queues thousands of requests and leaves', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await gatewayWith({ TOLLGATE_FLOW_QUEUE_PER_ORG: '5000' });
  }, 60_000);
  afterAll(async () => gateway?.close());

  it('leaves nothing waiting, nothing billed and every hold back', async () => {
    const holder = await gateway.tenant({ key: { maxConcurrency: 100 } });
    const stop = await occupy(gateway, holder.secret);
    const hostile = await gateway.tenant({ key: { maxConcurrency: 5000, requestsPerMinute: 100_000 } });
    const balance = await gateway.services.wallets.balance(hostile.orgId);
    const abort = new AbortController();
    // One signal for every request of the flood: Node warns past 1,500 listeners on one signal.
    setMaxListeners(QUEUED + 100, abort.signal);
    const answered: number[] = [];
    const sent = Array.from({ length: QUEUED }, () =>
      chat(gateway, hostile.secret, { max_tokens: 2, stream: true }, { signal: abort.signal }).then(
        (response) => answered.push(response.status),
        () => null,
      ),
    );
    await until(`${QUEUED} requests wait`, () => gateway.services.flow.waiting(hostile.orgId) === QUEUED, {
      timeout: 60_000,
      detail: () => ({ waiting: gateway.services.flow.waiting(hostile.orgId), answered }),
    });
    abort.abort();
    await Promise.all(sent);
    await until('nothing waits', () => gateway.services.flow.waiting() === 0, { timeout: 30_000 });
    await stop();
    await gateway.charged(15_000);
    expect(await recordsOf(gateway, hostile.orgId)).toEqual([]);
    expect(await gateway.services.wallets.balance(hostile.orgId)).toBe(balance);
    expect((await gateway.services.gateKeeper.gate.walletState(hostile.orgId)).holds).toEqual([]);
    expect(gateway.services.flow.snapshot().models.every((m) => m.waiting.length === 0)).toBe(true);
  }, 120_000);
});
