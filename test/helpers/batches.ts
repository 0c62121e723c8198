import OpenAI, { toFile } from 'openai';
import { until } from './wait.js';

type Json = Record<string, unknown>;

/** A batch file's lines: `count` requests to `url`, `custom_id` `<prefix>-1`, `<prefix>-2`, … */
export function batchFile(count: number, url: string, body: (i: number) => Json, prefix = 'req'): Buffer {
  const lines = Array.from({ length: count }, (_, i) =>
    JSON.stringify({ custom_id: `${prefix}-${i + 1}`, method: 'POST', url, body: body(i + 1) }),
  );
  return Buffer.from(`${lines.join('\n')}\n`);
}

export const chatLine = (i: number): Json => ({
  model: 'sim-chat',
  max_tokens: 12,
  messages: [{ role: 'user', content: `Question number ${i}` }],
});

export const embedLine = (i: number): Json => ({ model: 'sim-embed', input: `Sentence number ${i}` });

/** Uploads the file and makes the batch, through the SDK. */
export async function startBatch(client: OpenAI, file: Buffer, endpoint: OpenAI.Batches.BatchCreateParams['endpoint']) {
  const uploaded = await client.files.create({ file: await toFile(file, 'batch.jsonl'), purpose: 'batch' });
  return client.batches.create({ input_file_id: uploaded.id, endpoint, completion_window: '24h' });
}

const ENDED = new Set(['completed', 'failed', 'expired', 'cancelled']);

/**
 * The batch once it has ended, read through the SDK. Its lines count against the key's concurrency,
 * so a poll may be refused with 429 while they fill it: retried after its `Retry-After`, as the
 * SDK's default client does (docs/api.md, Batches).
 */
export async function ended(client: OpenAI, id: string, timeout = 50_000) {
  return until(
    `batch ${id} ends`,
    async () => {
      const batch = await client.batches.retrieve(id, { maxRetries: 5 });
      return ENDED.has(batch.status) && batch;
    },
    { timeout, interval: 200 },
  );
}

/** A result file's lines, parsed; none for a null id. */
export async function resultLines(client: OpenAI, fileId: string | null | undefined): Promise<Json[]> {
  if (!fileId) return [];
  const text = await (await client.files.content(fileId)).text();
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Json);
}

/** What the simulator counted for a model, from its own metrics: requests answered, tokens. */
export async function engineCounts(url: string, model: string) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const sum = (name: string) =>
    text
      .split('\n')
      .filter((line) => line.startsWith(`${name}{`) && line.includes(`model_name="${model}"`))
      .reduce((total, line) => total + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  return {
    requests: sum('vllm:request_success_total'),
    promptTokens: sum('vllm:prompt_tokens_total'),
    completionTokens: sum('vllm:generation_tokens_total'),
  };
}
