import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { openApiErrors } from '../../helpers/openapi.js';

const stores = await availableStores();

/** A batch file of `count` chat lines, `custom_id` req-1, req-2, … */
function batchLines(count: number): string[] {
  return Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      custom_id: `req-${i + 1}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'sim-chat', messages: [{ role: 'user', content: `Question ${i + 1}` }] },
    }),
  );
}

function jsonl(lines: string[]): string {
  return `${lines.join('\n')}\n`;
}

describe.each(stores)('/v1/files (%s)', (kind) => {
  let gateway: TestGateway;
  let client: OpenAI;
  let other: OpenAI;
  let otherSecret: string;

  beforeAll(async () => {
    openApiErrors('OpenAIFile', {});
    gateway = await startTestGateway(kind);
    const { secret } = await gateway.tenant({ key: { requestsPerMinute: 1_000_000 } });
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
    ({ secret: otherSecret } = await gateway.tenant({ key: { requestsPerMinute: 1_000_000 } }));
    other = new OpenAI({ baseURL: gateway.baseURL, apiKey: otherSecret, maxRetries: 0 });
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
  });

  it('uploads, lists, retrieves, reads and deletes a batch file through the openai SDK, in OpenAI shapes', async () => {
    const text = jsonl(batchLines(100));
    const created = await client.files.create({
      file: await toFile(Buffer.from(text), 'input.jsonl'),
      purpose: 'batch',
    });
    expect(openApiErrors('OpenAIFile', created)).toEqual([]);
    expect(created).toMatchObject({
      object: 'file',
      bytes: Buffer.byteLength(text),
      filename: 'input.jsonl',
      purpose: 'batch',
    });
    expect(await client.files.retrieve(created.id)).toEqual(created);
    const content = await client.files.content(created.id);
    expect(await content.text()).toBe(text);

    const notes = await client.files.create({
      purpose: 'user_data',
      file: await toFile(Buffer.from('not JSON at all\n'), 'notes.txt'),
    });
    const all = await client.files.list();
    expect(all.data.map((file) => file.id)).toEqual([notes.id, created.id]);
    const batchOnly = await client.files.list({ purpose: 'batch' });
    expect(batchOnly.data.map((file) => file.id)).toEqual([created.id]);
    const firstPage = await client.files.list({ limit: 1, order: 'asc' });
    expect(firstPage.data.map((file) => file.id)).toEqual([created.id]);
    expect(firstPage.has_more).toBe(true);
    const secondPage = await client.files.list({ limit: 1, order: 'asc', after: created.id });
    expect(secondPage.data.map((file) => file.id)).toEqual([notes.id]);
    expect(secondPage.has_more).toBe(false);

    expect(await client.files.delete(created.id)).toEqual({ id: created.id, object: 'file', deleted: true });
    await expect(client.files.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.files.content(created.id)).rejects.toMatchObject({ status: 404 });
    await client.files.delete(notes.id);
    expect((await client.files.list()).data).toEqual([]);
  });

  it("answers 404 for another organization's file on every route, and lists none of it", async () => {
    const mine = await client.files.create({
      file: await toFile(Buffer.from(jsonl(batchLines(3))), 'a.jsonl'),
      purpose: 'batch',
    });
    await expect(other.files.retrieve(mine.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.files.content(mine.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.files.delete(mine.id)).rejects.toMatchObject({ status: 404 });
    expect((await other.files.list()).data).toEqual([]);
    await expect(other.files.list({ after: mine.id })).rejects.toMatchObject({ status: 400 });
    // Still there for its owner, whole.
    expect(await (await client.files.content(mine.id)).text()).toBe(jsonl(batchLines(3)));
    await client.files.delete(mine.id);
  });

  it('refuses a batch file with a broken line 37 naming line 37, whichever field comes first, and keeps nothing', async () => {
    const lines = batchLines(50);
    lines[36] = '{"custom_id": "req-37", "method": "POST", "url": "/v1/chat/completions", "body": ';
    const file = () => toFile(Buffer.from(jsonl(lines)), 'broken.jsonl');
    for (const form of [
      async () => ({ file: await file(), purpose: 'batch' as const }),
      async () => ({ purpose: 'batch' as const, file: await file() }),
    ]) {
      const refused = await client.files.create(await form()).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
      expect((refused as Error).message).toContain('line 37 is not valid JSON');
    }
    expect((await client.files.list()).data).toEqual([]);
  });

  it('refuses a repeated custom_id, a wrong method, url or body, naming each line', async () => {
    const lines = batchLines(10);
    lines[6] = lines[2]!;
    lines[7] = lines[7]!.replace('"POST"', '"GET"');
    lines[8] = lines[8]!.replace('/v1/chat/completions', '/v1/images/generations');
    lines[9] = JSON.stringify({ custom_id: 'x', method: 'POST', url: '/v1/embeddings', body: [1] });
    const refused = await client.files
      .create({ file: await toFile(Buffer.from(jsonl(lines)), 'dup.jsonl'), purpose: 'batch' })
      .catch((error: unknown) => error as Error);
    expect((refused as Error).message).toContain('line 7 custom_id "req-3" is already on line 3');
    expect((refused as Error).message).toContain('line 8 method must be "POST"');
    expect((refused as Error).message).toContain('line 9 url must be one of');
    expect((refused as Error).message).toContain('line 10 body must be a JSON object');
    expect((await client.files.list()).data).toEqual([]);
  });

  it('refuses a form without purpose, with an unknown purpose, or without a file', async () => {
    const file = await toFile(Buffer.from(jsonl(batchLines(1))), 'a.jsonl');
    await expect(client.files.create({ file, purpose: 'fine-tune' })).rejects.toMatchObject({ status: 400 });
    const noFile = new FormData();
    noFile.set('purpose', 'batch');
    const answer = await fetch(`${gateway.baseURL}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${otherSecret}` },
      body: noFile,
    });
    expect(answer.status).toBe(400);
    expect(await answer.text()).toContain('file is required');
    expect((await client.files.list()).data).toEqual([]);
  });
});
