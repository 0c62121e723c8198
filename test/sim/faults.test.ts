import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/sim/index.js';
import { jsonOf, post, readAll, sseChunks, sseData, startTestSim, userSays } from './helpers.js';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startTestSim();
});
afterAll(() => sim.close());

const chatBody = { model: 'sim-chat', messages: userSays('hello') };

/** Both ways to ask for a fault: the header, and the body field a gateway forwards. */
const ways = [
  ['header', (mode: string, body: Record<string, unknown>) => ({ body, headers: { 'x-sim-fail': mode } })],
  ['body', (mode: string, body: Record<string, unknown>) => ({ body: { ...body, sim_fail: mode }, headers: {} })],
] as const;

describe.each(ways)('fault injection by %s', (_way, ask) => {
  const send = (mode: string, body: Record<string, unknown> = chatBody, path = '/v1/chat/completions') => {
    const { body: b, headers } = ask(mode, body);
    return post(sim, path, b, { headers });
  };

  it('"500" answers InternalServerError', async () => {
    const res = await send('500');
    expect(res.status).toBe(500);
    expect((await jsonOf(res)).error).toMatchObject({ type: 'InternalServerError', param: null, code: 500 });
  });

  it('"400" answers BadRequestError', async () => {
    const res = await send('400');
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).error).toMatchObject({ type: 'BadRequestError', code: 400 });
  });

  it('"leak" answers a 500 full of internal details', async () => {
    const res = await send('leak');
    expect(res.status).toBe(500);
    const { message } = (await jsonOf(res)).error;
    expect(message).toContain('vllm-worker-7.internal');
    expect(message).toContain('10.1.2.3:8000');
    expect(message).toContain(
      'Traceback (most recent call last):\n  File "/usr/lib/python3/dist-packages/vllm/engine.py", line 42',
    );
  });

  it('"midstream" sends 3 tokens, an error event and [DONE] in a 200 stream', async () => {
    const res = await send('midstream', { ...chatBody, stream: true, stream_options: {} });
    expect(res.status).toBe(200);
    const data = sseData(await res.text());
    expect(data.at(-1)).toBe('[DONE]');
    const events = data.slice(0, -1).map((d) => JSON.parse(d));
    expect(events).toHaveLength(5);
    expect(events[0].choices[0].delta.role).toBe('assistant');
    for (const chunk of events.slice(1, 4)) expect(chunk.choices[0]).toMatchObject({ finish_reason: null });
    expect(events[4]).toEqual({
      error: { message: expect.any(String), type: 'InternalServerError', param: null, code: 500 },
    });
  });

  it('"midstream" without stream answers 500', async () => {
    const res = await send('midstream');
    expect(res.status).toBe(500);
    expect((await jsonOf(res)).error.type).toBe('InternalServerError');
  });

  it('"drop" sends 3 tokens then cuts the connection without [DONE]', async () => {
    const res = await send('drop', { ...chatBody, stream: true });
    expect(res.status).toBe(200);
    const { text, error } = await readAll(res);
    expect(error).toBeTruthy();
    expect(text).not.toContain('[DONE]');
    const { chunks, done } = sseChunks(text);
    expect(done).toBe(false);
    expect(chunks).toHaveLength(4);
  });

  it('"drop" without stream cuts a partial JSON body', async () => {
    const res = await send('drop');
    await expect(res.json()).rejects.toThrow();
  });

  it('works on embeddings too', async () => {
    const res = await send('500', { model: 'sim-embed', input: 'x' }, '/v1/embeddings');
    expect(res.status).toBe(500);
  });
});

describe('fault bookkeeping', () => {
  it('rejects an unknown mode with 400 param sim_fail', async () => {
    const res = await post(sim, '/v1/chat/completions', { ...chatBody, sim_fail: 'explode' });
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).error).toMatchObject({ type: 'BadRequestError', param: 'sim_fail' });
  });

  it('leaves nothing running and counts no client aborts', async () => {
    const before = sim.stats();
    await (await post(sim, '/v1/chat/completions', { ...chatBody, stream: true, sim_fail: 'midstream' })).text();
    await readAll(await post(sim, '/v1/chat/completions', { ...chatBody, stream: true, sim_fail: 'drop' }));
    const after = sim.stats();
    expect(after.running).toBe(0);
    expect(after.aborted).toBe(before.aborted);
    expect(after.completed).toBe(before.completed);
    expect(after.generationTokens - before.generationTokens).toBe(6);
  });

  it('failureRate 1 fails every request, 0 none', async () => {
    const flaky = await startTestSim({ failureRate: 1 });
    try {
      for (let i = 0; i < 3; i++) {
        const res = await post(flaky, '/v1/chat/completions', chatBody);
        expect(res.status).toBe(500);
        expect((await jsonOf(res)).error.type).toBe('InternalServerError');
      }
    } finally {
      await flaky.close();
    }
    for (let i = 0; i < 3; i++) expect((await post(sim, '/v1/chat/completions', chatBody)).status).toBe(200);
  });
});
