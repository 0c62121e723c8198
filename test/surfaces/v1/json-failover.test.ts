import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import { engineStub } from '../../helpers/engine-stub.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';

const MODEL = 'sim-chat';
/** What the broken replica generates before it breaks: more than a checkpoint's worth (100). */
const BROKEN_AFTER_TOKENS = 150;
/** Answers asked for: a short one is asked of the engine as JSON, a long one as a stream. */
const SHORT = 8;
const LONG = 200;

type Breakage = 'connection cut' | 'error event';

/**
 * A replica that begins every answer, then breaks mid-answer: its connection cut, or its stream's
 * error event. A JSON call asked of it as a stream (one that may outgrow a checkpoint) is answered
 * with 150 content chunks first; one asked as JSON, with its headers and half a body.
 */
function breakingReplica(how: () => Breakage) {
  let answered = 0;
  const server = engineStub((text, res) => {
    answered += 1;
    const body = JSON.parse(text) as { stream?: boolean };
    if (body.stream !== true) {
      res.writeHead(200, { 'content-type': 'application/json' });
      // Cut once what is written has left (Node sends a response's first writes together, later).
      const half =
        '{"id":"cmpl-broken","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",';
      res.write(half, () => res.socket?.destroy());
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const head = '{"id":"chatcmpl-broken","object":"chat.completion.chunk","created":1,"model":"sim-chat"';
    for (let i = 0; i < BROKEN_AFTER_TOKENS; i++) {
      const usage = `"usage":{"prompt_tokens":5,"total_tokens":${6 + i},"completion_tokens":${i + 1}}`;
      const choice = '{"index":0,"delta":{"content":"x"},"logprobs":null,"finish_reason":null}';
      res.write(`data: ${head},"choices":[${choice}],${usage}}\n\n`);
    }
    if (how() === 'error event') res.end('data: {"error":{"message":"engine died","code":500}}\n\ndata: [DONE]\n\n');
    else res.write(': the engine breaks off\n\n', () => res.socket?.destroy());
  });
  return { server, answered: () => answered };
}

/**
 * A JSON call whose replica breaks mid-answer has sent its client nothing: it is answered by
 * another replica, as a replica that fails before answering is (`postWithFailover`), and billed
 * once, for the answer its client got; the broken attempt is billed nothing (docs/decisions.md).
 */
describe('a JSON call whose replica breaks mid-answer', () => {
  let breakage: Breakage = 'connection cut';
  const broken = breakingReplica(() => breakage);
  let sim: RunningSimulator;
  let gateway: TestGateway;
  let dir: string;

  beforeAll(async () => {
    await new Promise<void>((resolve) => broken.server.listen(0, '127.0.0.1', resolve));
    const brokenUrl = `http://127.0.0.1:${(broken.server.address() as AddressInfo).port}`;
    sim = await startSimulator({ models: [{ name: MODEL, task: 'chat' }], ttftMs: 0, itlMs: 0 });
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-json-failover-'));
    const file = path.join(dir, 'engines.json');
    const engines = [{ kind: 'static', model: MODEL, urls: [brokenUrl, sim.url] }];
    await writeFile(file, JSON.stringify({ engines }));
    gateway = await startTestGateway('pglite', { TOLLGATE_ENGINES_FILE: file, TOLLGATE_ENGINE_POLL_MS: '100' });
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
    await sim?.close();
    await new Promise((resolve) => broken.server.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it.each<[Breakage, number]>([
    ['connection cut', LONG],
    ['error event', LONG],
    ['connection cut', SHORT],
  ])(
    '%s, %i tokens asked: answered by the other replica, billed once for that answer',
    async (how, maxTokens) => {
      breakage = how;
      const tenant = await gateway.tenant();
      const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
      const brokenBefore = broken.answered();
      let calls = 0;
      // Until the broken replica has taken one: the router picks it by its own measure. A replica
      // whose connection was cut is out of rotation until its next health check.
      await until(
        'the broken replica has taken a call',
        async () => {
          calls += 1;
          const answer = await client.chat.completions.create({
            model: MODEL,
            messages: [{ role: 'user', content: `call ${calls}` }],
            max_tokens: maxTokens,
            ignore_eos: true,
          } as OpenAI.ChatCompletionCreateParamsNonStreaming);
          expect(answer.usage?.completion_tokens).toBe(maxTokens);
          expect(answer.choices[0]!.message.content).not.toMatch(/^x+$/);
          return broken.answered() > brokenBefore;
        },
        { timeout: 20_000, interval: 10 },
      );
      await gateway.charged();
      const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
      expect(records).toHaveLength(calls);
      for (const record of records) expect(record).toMatchObject({ status: 200, completionTokens: maxTokens });
    },
    30_000,
  );
});
