import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../src/shared/db/schema.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { until } from '../helpers/wait.js';

type Json = Record<string, unknown>;

/** Tokens the simulator generates for every answer, one every ITL_MS: a cancel lands half-way. */
const ANSWER_TOKENS = 400;
const ITL_MS = 10;

/**
 * Background responses (`background: true`): answered at once as `queued`, run after, polled to
 * their end, cancelled half-way, and another organization's ids 404.
 */
describe('background responses on one gateway', () => {
  let sim: RunningSimulator;
  let gateway: TestGateway;
  let tenant: { orgId: string; secret: string };
  let client: OpenAI;

  beforeAll(async () => {
    sim = await startSimulator({
      models: [{ name: 'sim-chat', task: 'chat' }],
      itlMs: ITL_MS,
      defaultMaxTokens: ANSWER_TOKENS,
    });
    gateway = await startTestGateway('pglite', {}, { engines: { 'sim-chat': sim.url } });
    tenant = await gateway.tenant({ credit: '50.00', key: { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 } });
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
  });
  afterAll(async () => {
    await gateway?.close();
    await sim?.close();
  });

  async function post(secret: string, path: string, body?: Json): Promise<Response> {
    return fetch(`${gateway.baseURL}${path}`, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: body && JSON.stringify(body),
    });
  }

  async function recordOf(requestId: string) {
    await gateway.charged(20_000);
    const [record] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.id, requestId));
    return record;
  }

  async function holdsOf(orgId: string) {
    return (await gateway.services.gateKeeper.gate.walletState(orgId)).holds;
  }

  it('answers queued at once, runs, and is read back completed, billed as the engine counted', async () => {
    const before = sim.stats().generationTokens;
    const answer = await post(tenant.secret, '/responses', {
      model: 'sim-chat',
      input: 'Write at length.',
      background: true,
    });
    expect(answer.status).toBe(200);
    const requestId = answer.headers.get('x-request-id')!;
    const queued = (await answer.json()) as Json;
    expect(queued).toMatchObject({ object: 'response', status: 'queued', background: true, output: [] });
    // The hold is taken when it is queued.
    expect((await holdsOf(tenant.orgId)).length).toBe(1);
    const done = await until(
      'the response is completed',
      async () => {
        const read = await client.responses.retrieve(queued.id as string);
        return read.status === 'completed' && read;
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(done.output_text.length).toBeGreaterThan(0);
    expect(done.usage?.output_tokens).toBe(ANSWER_TOKENS);
    const record = await recordOf(requestId);
    expect(record).toMatchObject({
      endpoint: 'responses',
      status: 200,
      completionTokens: ANSWER_TOKENS,
      usageSource: 'upstream',
    });
    expect(sim.stats().generationTokens - before).toBe(ANSWER_TOKENS);
    expect(record!.promptTokens).toBe(done.usage?.input_tokens);
    expect(await holdsOf(tenant.orgId)).toEqual([]);
  }, 30_000);

  it('background without store is a 400, as OpenAI answers', async () => {
    const answer = await post(tenant.secret, '/responses', {
      model: 'sim-chat',
      input: 'Hi',
      background: true,
      store: false,
    });
    expect(answer.status).toBe(400);
    expect(JSON.stringify(await answer.json())).toContain('background');
  });

  it('a cancel half-way stops the engine, bills what it generated and gives the hold back', async () => {
    const aborted = sim.stats().aborted;
    const answer = await post(tenant.secret, '/responses', {
      model: 'sim-chat',
      input: 'Write at length.',
      background: true,
    });
    const requestId = answer.headers.get('x-request-id')!;
    const { id } = (await answer.json()) as { id: string };
    await until(
      'some tokens are generated',
      async () => {
        const row = await gateway.services.backgroundResponses.store.get(tenant.orgId, id);
        return row && row.generatedTokens > 20;
      },
      { timeout: 10_000, interval: 20 },
    );
    const cancelled = await client.responses.cancel(id);
    expect(cancelled.status).toBe('cancelled');
    // The engine sees its connection close, and the charge and the hold's release follow, each a
    // moment after the answer on a loaded machine: waited for, not assumed.
    await until('the engine saw the abort', () => sim.stats().aborted === aborted + 1, { timeout: 10_000 });
    expect((await client.responses.retrieve(id)).status).toBe('cancelled');
    const record = await until('the cancelled call is charged', () => recordOf(requestId), { timeout: 30_000 });
    expect(record.completionTokens).toBeGreaterThan(20);
    expect(record.completionTokens).toBeLessThan(ANSWER_TOKENS);
    expect(record.status).toBe(499);
    await until('the hold is given back', async () => (await holdsOf(tenant.orgId)).length === 0, {
      timeout: 10_000,
    });
    expect(sim.stats().aborted).toBe(aborted + 1);
    // Cancelling again is the same answer; a completed one is a 400.
    expect((await client.responses.cancel(id)).status).toBe('cancelled');
  }, 30_000);

  it('cancelling a finished response is a 400; a foreground one is not cancelled', async () => {
    const foreground = await client.responses.create({ model: 'sim-chat', input: 'Hi', max_output_tokens: 4 });
    const refused = await post(tenant.secret, `/responses/${foreground.id}/cancel`, {});
    expect(refused.status).toBe(400);
    const answer = await post(tenant.secret, '/responses', {
      model: 'sim-chat',
      input: 'Hi',
      background: true,
      max_output_tokens: 4,
    });
    const { id } = (await answer.json()) as { id: string };
    // Four tokens of the engine's 400: it ends `incomplete`, which is finished as `completed` is.
    await until('finished', async () => (await client.responses.retrieve(id)).status === 'incomplete', {
      timeout: 10_000,
      interval: 50,
    });
    const late = await post(tenant.secret, `/responses/${id}/cancel`, {});
    expect(late.status).toBe(400);
    expect(JSON.stringify(await late.json())).toContain('Cannot cancel a response that is incomplete');
  }, 30_000);

  it("another organization's background response is 404 on GET, cancel and stream", async () => {
    const other = await gateway.tenant();
    const answer = await post(tenant.secret, '/responses', {
      model: 'sim-chat',
      input: 'Write.',
      background: true,
      stream: true,
    });
    const reader = answer.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const id = /"id":"(resp_[0-9a-f]+)"/.exec(first)![1]!;
    for (const [path, body] of [
      [`/responses/${id}`, undefined],
      [`/responses/${id}?stream=true&starting_after=0`, undefined],
      [`/responses/${id}/cancel`, {}],
    ] as const) {
      const refused = await post(other.secret, path, body);
      expect(refused.status, path).toBe(404);
    }
    // Still running, and still its organization's to cancel.
    expect((await client.responses.cancel(id)).status).toBe('cancelled');
    await reader.cancel();
  }, 30_000);

  it('a stream whose client left is resumed after its last event, none lost or repeated', async () => {
    const answer = await post(tenant.secret, '/responses', {
      model: 'sim-chat',
      input: 'Write at length.',
      background: true,
      stream: true,
    });
    expect(answer.headers.get('content-type')).toContain('text/event-stream');
    const reader = answer.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (sequencesOf(text).length < 10) text += decoder.decode((await reader.read()).value, { stream: true });
    // The client leaves after ten events or so; the response runs on.
    await reader.cancel();
    const seen = sequencesOf(text);
    const last = seen[seen.length - 1]!;
    const id = /"id":"(resp_[0-9a-f]+)"/.exec(text)![1]!;
    const resumed = await post(tenant.secret, `/responses/${id}?stream=true&starting_after=${last}`);
    expect(resumed.status).toBe(200);
    const rest = await resumed.text();
    const after = sequencesOf(rest);
    expect(after[0]).toBe(last + 1);
    const all = [...seen, ...after];
    expect(all).toEqual(all.map((_, index) => index));
    expect(rest).toContain('event: response.completed');
    const done = await client.responses.retrieve(id);
    expect(done.status).toBe('completed');
    expect(done.usage?.output_tokens).toBe(ANSWER_TOKENS);
  }, 30_000);

  it('starting_after that is not a number is a 400; a response made without stream is not streamed', async () => {
    const answer = await post(tenant.secret, '/responses', {
      model: 'sim-chat',
      input: 'Hi',
      background: true,
      max_output_tokens: 4,
    });
    const { id } = (await answer.json()) as { id: string };
    expect((await post(tenant.secret, `/responses/${id}?stream=true&starting_after=x`)).status).toBe(400);
    expect((await post(tenant.secret, `/responses/${id}?stream=true`)).status).toBe(400);
  });
});

/** The `sequence_number` of each whole event in `text`, in order. */
function sequencesOf(text: string): number[] {
  const whole = text.slice(0, text.lastIndexOf('\n\n') + 2);
  return [...whole.matchAll(/^data: \{"type":"[^"]+","sequence_number":(\d+)/gm)].map((match) => Number(match[1]));
}

describe('background responses bounded per organization', () => {
  let sim: RunningSimulator;
  let gateway: TestGateway;

  beforeAll(async () => {
    // Slow: the first response is still running when the second is asked.
    sim = await startSimulator({ models: [{ name: 'sim-chat', task: 'chat' }], itlMs: 50, defaultMaxTokens: 200 });
    const env = { TOLLGATE_RESPONSES_MAX_BACKGROUND: '1' };
    gateway = await startTestGateway('pglite', env, { engines: { 'sim-chat': sim.url } });
  });
  afterAll(async () => {
    await gateway?.close();
    await sim?.close();
  });

  it('one more than TOLLGATE_RESPONSES_MAX_BACKGROUND is a 429 naming it, holding nothing; others are not counted', async () => {
    const key = { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 };
    const [first, second] = [await gateway.tenant({ key }), await gateway.tenant({ key })];
    const body = JSON.stringify({ model: 'sim-chat', input: 'Hi', background: true, max_output_tokens: 200 });
    const post = (secret: string) =>
      fetch(`${gateway.baseURL}/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body,
      });
    const running = (await (await post(first.secret)).json()) as { id: string };
    const store = gateway.services.backgroundResponses.store;
    const refused = await post(first.secret);
    expect(refused.status).toBe(429);
    expect(JSON.stringify(await refused.json())).toContain('TOLLGATE_RESPONSES_MAX_BACKGROUND');
    expect(await store.active(first.orgId)).toBe(1);
    // Another organization is not counted against it.
    const other = (await (await post(second.secret)).json()) as { id: string };
    for (const [tenant, id] of [
      [first, running.id],
      [second, other.id],
    ] as const) {
      const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
      expect((await client.responses.cancel(id)).status).toBe('cancelled');
    }
    // Cancelled, it is no longer counted.
    expect((await post(first.secret)).status).toBe(200);
    await gateway.charged(20_000);
    expect((await gateway.services.gateKeeper.gate.walletState(first.orgId)).holds).toEqual([]);
  }, 30_000);
});
