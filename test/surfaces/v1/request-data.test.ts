import { randomUUID } from 'node:crypto';
import { eq, inArray, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeRequestData } from '../../../src/gateway/billing/request-data.js';
import { requestData, usageRecords } from '../../../src/shared/db/schema.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { sseData } from '../../helpers/sse.js';

const stores = await oneStore();

/** The text a client reads from a chat stream's data events. */
function streamText(data: string[]): string {
  return data
    .filter((d) => d !== '[DONE]')
    .map(
      (d) =>
        (JSON.parse(d) as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content ?? '',
    )
    .join('');
}

describe.each(stores)('request data (%s)', (store) => {
  let gateway: TestGateway;
  /** Every line the gateway logged, at debug level. */
  const lines: string[] = [];

  beforeAll(async () => {
    gateway = await startTestGateway(store, {}, { log: createLogger('debug', (line) => lines.push(line)) });
  });
  afterAll(() => gateway?.close());

  const post = (
    target: TestGateway,
    path: 'chat/completions' | 'embeddings',
    secret: string,
    body: Record<string, unknown>,
  ) =>
    fetch(`${target.baseURL}/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const chatBody = (content: string, extra: Record<string, unknown> = {}) => ({
    model: 'sim-chat',
    max_tokens: 8,
    messages: [{ role: 'user', content }],
    ...extra,
  });
  const rowOf = async (requestId: string | null) => {
    await gateway.services.applier.settled(5_000);
    const rows = await gateway.services.db.select().from(requestData).where(eq(requestData.requestId, requestId!));
    return rows[0];
  };
  /**
   * The usage record of a request, once every call has ended and its charge is written (a stream's
   * charge lands as it ends).
   */
  async function recordOf(requestId: string | null) {
    await gateway.charged();
    const [record] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.id, requestId!));
    if (!record) throw new Error(`no usage record for ${requestId}`);
    return record;
  }

  it('keeps the request body and the answer of a JSON chat request, with its usage record', async () => {
    const { secret } = await gateway.tenant({ key: { storeRequestData: true } });
    const prompt = `json prompt ${randomUUID()}`;
    const body = chatBody(prompt);
    const response = await post(gateway, 'chat/completions', secret, body);
    expect(response.status).toBe(200);
    const text = await response.text();
    const completion = (JSON.parse(text) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message
      .content;
    expect(completion.length).toBeGreaterThan(0);

    const requestId = response.headers.get('x-request-id');
    await recordOf(requestId);
    const row = await rowOf(requestId);
    expect(row).toBeDefined();
    expect(row!.requestBody).toContain(prompt);
    expect(JSON.parse(row!.requestBody)).toEqual(body);
    expect(row!.responseBody).toContain(completion);
    // The answer exactly as the client received it.
    expect(row!.responseBody).toBe(text);
  });

  it("keeps a stream's data events, one per line", async () => {
    const { secret } = await gateway.tenant({ key: { storeRequestData: true } });
    const prompt = `stream prompt ${randomUUID()}`;
    const response = await post(gateway, 'chat/completions', secret, chatBody(prompt, { stream: true }));
    expect(response.status).toBe(200);
    const data = sseData(await response.text());
    const completion = streamText(data);
    expect(completion.length).toBeGreaterThan(0);

    const requestId = response.headers.get('x-request-id');
    await recordOf(requestId);
    const row = await rowOf(requestId);
    expect(row).toBeDefined();
    expect(row!.requestBody).toContain(prompt);
    const stored = row!.responseBody.split('\n');
    expect(stored).toEqual(data.filter((d) => d !== '[DONE]'));
    expect(streamText(stored)).toBe(completion);
  });

  it('keeps embeddings requests and answers', async () => {
    const { secret } = await gateway.tenant({ key: { storeRequestData: true } });
    const input = `embedding input ${randomUUID()}`;
    const response = await post(gateway, 'embeddings', secret, { model: 'sim-embed', input });
    expect(response.status).toBe(200);
    const text = await response.text();
    const requestId = response.headers.get('x-request-id');
    await recordOf(requestId);
    const row = await rowOf(requestId);
    expect(row).toBeDefined();
    expect(row!.requestBody).toContain(input);
    expect(JSON.parse(row!.responseBody)).toEqual(JSON.parse(text));
  });

  it('stores nothing for a key with it off', async () => {
    const { secret, orgId } = await gateway.tenant();
    const ids: string[] = [];
    for (const [path, body] of [
      ['chat/completions', chatBody('off json')],
      ['chat/completions', chatBody('off stream', { stream: true })],
      ['embeddings', { model: 'sim-embed', input: 'off embedding' }],
    ] as const) {
      const response = await post(gateway, path, secret, body);
      expect(response.status).toBe(200);
      await response.text();
      ids.push(response.headers.get('x-request-id')!);
    }
    for (const id of ids) await recordOf(id);
    await gateway.services.applier.settled(5_000);
    expect(await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, orgId))).toHaveLength(3);
    expect(
      await gateway.services.db.select().from(requestData).where(inArray(requestData.requestId, ids)),
    ).toHaveLength(0);
  });

  it('never logs prompt or completion text, at debug level, for keys with storing off or on, failures included', async () => {
    const marker = `MARKER-${randomUUID()}`;
    const completions: string[] = [];
    const failures: number[] = [];
    for (const storeRequestData of [false, true]) {
      const { secret } = await gateway.tenant({ key: { storeRequestData } });
      const json = await post(gateway, 'chat/completions', secret, chatBody(`${marker} json`));
      expect(json.status).toBe(200);
      completions.push(
        (JSON.parse(await json.text()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message
          .content,
      );
      const stream = await post(gateway, 'chat/completions', secret, chatBody(`${marker} stream`, { stream: true }));
      expect(stream.status).toBe(200);
      completions.push(streamText(sseData(await stream.text())));
      const embedding = await post(gateway, 'embeddings', secret, { model: 'sim-embed', input: `${marker} embedding` });
      expect(embedding.status).toBe(200);
      await embedding.arrayBuffer();

      const failed = await post(gateway, 'chat/completions', secret, chatBody(`${marker} fails`, { sim_fail: '500' }));
      failures.push(failed.status);
      await failed.arrayBuffer();
      const midstream = await post(
        gateway,
        'chat/completions',
        secret,
        chatBody(`${marker} fails midway`, { stream: true, sim_fail: 'midstream' }),
      );
      expect(midstream.status).toBe(200);
      const data = sseData(await midstream.text());
      expect(data.some((d) => d.includes('"error"'))).toBe(true);
      const partial = streamText(data);
      if (partial.trim().split(/\s+/).length > 1) completions.push(partial);
      await recordOf(midstream.headers.get('x-request-id'));
      // An invalid request, which the gateway refuses itself.
      const refused = await post(gateway, 'chat/completions', secret, {
        ...chatBody(`${marker} refused`),
        stream: 'yes',
      });
      expect(refused.status).toBe(400);
      await refused.arrayBuffer();
    }
    expect(failures).toEqual([502, 502]);

    // The logger was in use: the engine failures were logged, without the text.
    expect(lines.some((line) => line.includes('request failed'))).toBe(true);
    for (const line of lines) {
      expect(line).not.toContain(marker);
      expect(line).not.toContain('MARKER-');
      for (const completion of completions) expect(line).not.toContain(completion);
    }
  });

  it('purges stored bodies older than the retention and keeps fresh ones', async () => {
    const { secret } = await gateway.tenant({ key: { storeRequestData: true } });
    const ids: string[] = [];
    for (const content of ['old request', 'fresh request']) {
      const response = await post(gateway, 'chat/completions', secret, chatBody(content));
      await response.arrayBuffer();
      ids.push(response.headers.get('x-request-id')!);
      await recordOf(ids.at(-1)!);
    }
    const [old, fresh] = ids as [string, string];
    await gateway.services.db
      .update(requestData)
      .set({ createdAt: sql`now() - interval '40 days'` })
      .where(eq(requestData.requestId, old));

    expect(await purgeRequestData(gateway.services.db, 30)).toBe(1);
    expect(await rowOf(old)).toBeUndefined();
    expect(await rowOf(fresh)).toBeDefined();
    // Only the bodies go: the usage record stays.
    expect(await recordOf(old)).toBeDefined();
    // Nothing else is old enough.
    expect(await purgeRequestData(gateway.services.db, 30)).toBe(0);
    expect(await rowOf(fresh)).toBeDefined();
  });

  it('cuts a body bigger than TOLLGATE_REQUEST_DATA_MAX_BYTES and says so', async () => {
    const small = await startTestGateway(store, { TOLLGATE_REQUEST_DATA_MAX_BYTES: '2048' });
    try {
      const { secret } = await small.tenant({ key: { storeRequestData: true } });
      // Multi-byte characters, so the cut can fall inside one.
      const body = chatBody(`cut me ${'€'.repeat(1000)}`, { max_tokens: 4 });
      const sent = JSON.stringify(body);
      expect(Buffer.byteLength(sent)).toBeGreaterThan(2048);
      const response = await post(small, 'chat/completions', secret, body);
      expect(response.status).toBe(200);
      const answer = await response.text();
      const requestId = response.headers.get('x-request-id')!;
      await small.services.applier.settled(5_000);
      const [row] = await small.services.db.select().from(requestData).where(eq(requestData.requestId, requestId));
      expect(row).toBeDefined();
      const suffix = '[cut at 2048 bytes]';
      expect(row!.requestBody.endsWith(suffix)).toBe(true);
      const kept = row!.requestBody.slice(0, -suffix.length).replace(/…$/, '');
      expect(sent.startsWith(kept)).toBe(true);
      expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(2048);
      expect(Buffer.byteLength(kept)).toBeGreaterThan(2048 - 4);
      expect(kept).not.toContain('\uFFFD');
      // A small answer is kept whole.
      expect(row!.responseBody).toBe(answer);
    } finally {
      await small.close();
    }
  });
});
