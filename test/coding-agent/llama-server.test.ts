import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import {
  type Exchange,
  llamaServerMissing,
  type LlamaServer,
  recordingProxy,
  reportedUsage,
  startLlamaServer,
} from '../helpers/llama-server.js';
import { repoRoot } from '../helpers/processes.js';
import { skippedWithout } from '../helpers/skips.js';
import { until } from '../helpers/wait.js';
import { agent } from './agent-process.js';

/**
 * `tollgate code -p` once against llama.cpp's own server behind the gateway,
 * as an operator registers it (a `static` engine): the tiny random-weight
 * model answers noise, but over the real protocol (tools offered, a stream
 * with usage), and each turn the agent prints must be what the engine
 * counted, read at the engine through a recording proxy, and what the
 * gateway billed.
 */

const missing = llamaServerMissing();
skippedWithout(missing);

describe.skipIf(missing !== null)('tollgate code -p against llama-server', () => {
  let server: LlamaServer;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let tmp: string;
  let gateway: TestGateway;

  beforeAll(async () => {
    server = await startLlamaServer('llama-code', ['--parallel', '1']);
    proxy = await recordingProxy(server.url);
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-code-llama-'));
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: proxy.url }] }),
    );
    gateway = await startTestGateway('pglite', {
      TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json'),
      TOLLGATE_ENGINE_POLL_MS: '200',
    });
    await until(
      'the engine ready',
      () => gateway.services.fleet.status().find((e) => e.model === 'sim-chat')?.replicas[0]?.state === 'ready',
      { timeout: 20_000, detail: () => gateway.services.fleet.status() },
    );
  }, 120_000);
  afterAll(async () => {
    await gateway?.close();
    proxy?.close();
    await server?.child.stop('SIGTERM');
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('runs a task to its end, each turn billed as the engine counted, and prints those costs', async () => {
    const { secret } = await gateway.tenant();
    const project = path.join(tmp, 'project');
    await mkdir(project);
    await writeFile(path.join(project, 'calc.js'), 'export const add = (a, b) => a - b;\n');
    // Short answers (the noise is not worth more), and few turns should the noise parse as tool
    // calls.
    await mkdir(path.join(tmp, 'config'));
    await writeFile(
      path.join(tmp, 'config/config.json'),
      JSON.stringify({ limits: { max_output_tokens: 24, min_output_tokens: 8, max_steps: 3 } }),
    );
    const run = agent(
      ['-p', 'read calc.js and fix the add function', '--approval', 'plan', '--output-format', 'stream-json'],
      { TOLLGATE_URL: gateway.url, TOLLGATE_API_KEY: secret, TOLLGATE_CONFIG_DIR: path.join(tmp, 'config') },
      project,
    );
    const code = await run.exit;
    // Kept for reading (when test-results/ exists): what the agent printed of the noise.
    await writeFile(path.join(repoRoot, 'test-results', 'tollgate-code-llama-server.jsonl'), run.stdout).catch(
      () => undefined,
    );
    const events = run.events();
    const result = events.at(-1)!;
    // Noise ends a task one way or the other (an answer, or the step limit): either is a clean end.
    expect(result.type, run.stderr).toBe('result');
    expect([0, 1]).toContain(code);
    const turns = events.filter((e) => e.type === 'turn');
    expect(turns.length).toBeGreaterThanOrEqual(1);

    await gateway.charged(10_000);
    const records = (
      (await (
        await fetch(`${gateway.baseURL}/usage/requests?limit=100`, { headers: { authorization: `Bearer ${secret}` } })
      ).json()) as {
        data: Array<{ id: string; cost_nanos: string; prompt_tokens: number; completion_tokens: number }>;
      }
    ).data;
    const chatsOf = (): Exchange[] => proxy.exchanges.filter((e) => e.path === '/v1/chat/completions');
    await until('the proxy has recorded every turn', () => chatsOf().length >= turns.length, { timeout: 5_000 });
    const chats = chatsOf();
    expect(chats).toHaveLength(turns.length);
    expect(records).toHaveLength(turns.length);
    for (const [i, turn] of turns.entries()) {
      const sent = JSON.parse(chats[i]!.request) as { tools?: unknown[]; stream?: boolean; max_tokens?: number };
      expect(sent.tools?.length).toBeGreaterThan(0);
      expect(sent.max_tokens).toBeLessThanOrEqual(24);
      const counted = reportedUsage(chats[i]!);
      expect(counted, chats[i]!.response.slice(0, 500)).not.toBeNull();
      const record = records.find((r) => r.id === turn.request_id)!;
      expect(record, `usage record ${String(turn.request_id)}`).toBeDefined();
      expect({ prompt: record.prompt_tokens, completion: record.completion_tokens }).toEqual({
        prompt: counted!.prompt_tokens,
        completion: counted!.completion_tokens,
      });
      expect({ cost: turn.cost_nanos, prompt: turn.prompt_tokens, completion: turn.completion_tokens }).toEqual({
        cost: record.cost_nanos,
        prompt: record.prompt_tokens,
        completion: record.completion_tokens,
      });
    }
    const total = turns.reduce((sum, t) => sum + BigInt(t.cost_nanos as string), 0n);
    expect(result.cost_nanos).toBe(total.toString());
    expect(total).toBeGreaterThan(0n);
  }, 120_000);
});
