import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batches } from '../../../src/shared/db/batches-schema.js';
import { batchFile, chatLine, ended, resultLines, startBatch } from '../../helpers/batches.js';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';
import { signIn } from '../api/harness.js';

const stores = await oneStore();

type Json = Record<string, unknown>;

/**
 * A JSON array nested `levels` deep: what V8's JSON.parse reads, and its JSON.stringify overflows
 * on.
 */
const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const deepLine = (id: string, levels: number) =>
  `{"custom_id":"${id}","method":"POST","url":"/v1/chat/completions","body":{"model":"sim-chat",` +
  `"messages":[{"role":"user","content":"hi"}],"metadata":${nested(levels)}}}\n`;

/**
 * A batch's bad input is bounded as a request's is, and its money is traceable: a line the routes
 * would refuse for its depth is refused at upload naming its line; a line that cannot be read later
 * is an error line; a batch never stays `validating` (it fails with `errors`); every usage record
 * of a cancelled batch is one line of its files, with the usage it was billed; and records name
 * their batch on `/v1/usage/requests`, the portal's list and its CSV.
 */
describe.each(stores)('batches: bad input bounded, every charge shown (%s)', (store) => {
  let gateway: TestGateway;
  let client: OpenAI;
  let secret: string;
  let orgId: string;

  beforeAll(async () => {
    gateway = await startTestGateway(store, {
      TOLLGATE_BATCHES_CONCURRENCY: '16',
      TOLLGATE_BATCHES_VALIDATING_SECONDS: '600',
      TOLLGATE_SIM_TTFT_MS: '20',
      TOLLGATE_SIM_ITL_MS: '10',
      TOLLGATE_PASSWORD_COST: '10',
    });
    const tenant = await gateway.tenant({
      credit: '100.00',
      key: { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 },
    });
    ({ orgId, secret } = tenant);
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
  });

  /** A batch file kept as it is, past the upload's check: as one uploaded under an older one was. */
  async function storedFile(text: string): Promise<string> {
    const { blobs, fileStore } = gateway.services;
    const blob = await blobs.put(
      (async function* () {
        yield Buffer.from(text);
      })(),
      1 << 30,
    );
    const owner = { orgId, projectId: null };
    return (await fileStore.record(owner, { filename: 'old.jsonl', purpose: 'batch', blob, lines: null })).id;
  }

  const create = (inputFileId: string) =>
    client.batches.create({ input_file_id: inputFileId, endpoint: '/v1/chat/completions', completion_window: '24h' });

  it('refuses at upload a line nested deeper than the routes allow, naming the line', async () => {
    const good = batchFile(2, '/v1/chat/completions', chatLine);
    // The route refuses the same body for its depth.
    const body = JSON.parse(deepLine('x', 65)).body as Json;
    await expect(client.chat.completions.create(body as never)).rejects.toMatchObject({ status: 400 });
    for (const levels of [65, 200_000]) {
      const file = Buffer.concat([good, Buffer.from(deepLine('deep', levels))]);
      const upload = client.files.create({ file: await toFile(file, 'deep.jsonl'), purpose: 'batch' });
      await expect(upload).rejects.toMatchObject({
        status: 400,
        error: expect.objectContaining({ message: expect.stringMatching(/line 3 body nests deeper than 64 levels/) }),
      });
    }
    // At the bound, it is a request like any other.
    const file = Buffer.concat([good, Buffer.from(deepLine('at-bound', 60))]);
    await expect(
      client.files.create({ file: await toFile(file, 'ok.jsonl'), purpose: 'batch' }),
    ).resolves.toMatchObject({
      purpose: 'batch',
    });
  });

  it('makes a deep line that got past an older check an error line, and runs the rest', async () => {
    const text = batchFile(2, '/v1/chat/completions', chatLine).toString() + deepLine('deep', 200_000);
    const batch = await ended(client, (await create(await storedFile(text))).id, 20_000);
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: 3, completed: 2, failed: 1 });
    const errors = await resultLines(client, batch.error_file_id);
    expect(errors).toEqual([expect.objectContaining({ custom_id: 'deep', response: null })]);
    expect(errors[0]!.error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/Line 3/) });
  }, 30_000);

  it('fails a batch whose file cannot be kept as lines, with errors, instead of validating it for good', async () => {
    // PostgreSQL cannot keep a NUL in text: the line's insert fails, as it would on every lease.
    const line = { custom_id: 'nul\u0000id', method: 'POST', url: '/v1/chat/completions', body: chatLine(1) };
    const text = `${JSON.stringify(line)}\n`;
    const batch = await ended(client, (await create(await storedFile(text))).id, 20_000);
    expect(batch).toMatchObject({
      status: 'failed',
      errors: { data: [expect.objectContaining({ code: 'invalid_file' })] },
    });
    // The upload refuses it, naming the line.
    await expect(
      client.files.create({ file: await toFile(Buffer.from(text), 'nul.jsonl'), purpose: 'batch' }),
    ).rejects.toMatchObject({
      status: 400,
      error: expect.objectContaining({ message: expect.stringMatching(/line 1 custom_id/) }),
    });
  }, 30_000);

  it('fails a batch validating longer than TOLLGATE_BATCHES_VALIDATING_SECONDS, with errors', async () => {
    const model = await ended(
      client,
      (await create(await storedFile(batchFile(1, '/v1/chat/completions', chatLine).toString()))).id,
    );
    const [row] = await gateway.services.db.select().from(batches).where(eq(batches.id, model.id));
    // As a batch whose every reading failed for the store, or whose every reader died: made long
    // ago.
    const id = `batch_${randomBytes(16).toString('hex')}`;
    await gateway.services.db.insert(batches).values({
      ...row!,
      id,
      status: 'validating',
      createdAt: new Date(Date.now() - 3_600_000),
      inProgressAt: null,
      finalizingAt: null,
      completedAt: null,
      outputFileId: null,
      errorFileId: null,
      total: 0,
      completed: 0,
      failed: 0,
      claimedBy: null,
      leaseUntil: null,
      errors: null,
    });
    const batch = await ended(client, id, 20_000);
    expect(batch).toMatchObject({
      status: 'failed',
      errors: {
        data: [
          expect.objectContaining({
            code: 'validation_timeout',
            message: expect.stringMatching(/TOLLGATE_BATCHES_VALIDATING_SECONDS/),
          }),
        ],
      },
    });
  }, 30_000);

  /** The key's usage records, every page of `/v1/usage/requests`, read over HTTP. */
  async function usageRecords(): Promise<Json[]> {
    await gateway.charged(10_000);
    const records: Json[] = [];
    for (let after: string | null = null, first = true; first || after; first = false) {
      const query = new URLSearchParams({ limit: '500', ...(after ? { after } : {}) });
      const response = await fetch(`${gateway.baseURL}/usage/requests?${query.toString()}`, {
        headers: { authorization: `Bearer ${secret}` },
      });
      expect(response.status).toBe(200);
      const page = (await response.json()) as { data: Json[]; next_cursor: string | null };
      records.push(...page.data);
      after = page.next_cursor;
    }
    return records;
  }

  it("shows a cancelled batch's every usage record as one line of its files, with the usage it was billed", async () => {
    // Lines that take 3 s each at the engine: the second wave is in flight when the batch is
    // cancelled.
    const slow = (i: number) => ({ ...chatLine(i), max_tokens: 300, ignore_eos: true });
    const created = await startBatch(client, batchFile(48, '/v1/chat/completions', slow, 's'), '/v1/chat/completions');
    await until(
      'some lines are done',
      async () => ((await client.batches.retrieve(created.id)).request_counts?.completed ?? 0) > 0,
      { timeout: 30_000, interval: 50 },
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    await client.batches.cancel(created.id);
    const batch = await ended(client, created.id, 30_000);
    expect(batch.status).toBe('cancelled');
    const lines = [
      ...(await resultLines(client, batch.output_file_id)),
      ...(await resultLines(client, batch.error_file_id)),
    ];
    const records = (await usageRecords()).filter((record) => record.batch_id === batch.id);
    expect(records.filter((record) => record.status === 200).length).toBeGreaterThan(0);
    // Aborted in flight, billed their prompt.
    expect(records.filter((record) => record.status === 499).length).toBeGreaterThan(0);
    for (const record of records) {
      const shown = lines.filter((line) => (line.response as Json | null)?.request_id === record.id);
      expect(shown, `record ${String(record.id)} (status ${String(record.status)})`).toHaveLength(1);
      const response = shown[0]!.response as { status_code: number; body: { usage: Json } };
      expect(response.status_code).toBe(record.status);
      expect(response.body.usage).toMatchObject({
        prompt_tokens: record.prompt_tokens,
        completion_tokens: record.completion_tokens,
      });
    }
  }, 90_000);

  it('names the batch of a line on /v1/usage/requests, in the ledger export and in the portal (list and CSV)', async () => {
    const { response: answered } = await client.chat.completions.create(chatLine(0) as never).withResponse();
    const aloneId = answered.headers.get('x-request-id')!;
    const created = await startBatch(
      client,
      batchFile(3, '/v1/chat/completions', chatLine, 'n'),
      '/v1/chat/completions',
    );
    const batch = await ended(client, created.id);
    expect(batch.status).toBe('completed');
    const all = await usageRecords();
    expect(all.find((record) => record.id === aloneId)).toMatchObject({ batch_id: null });
    const records = all.filter((record) => record.batch_id === batch.id);
    expect(records).toHaveLength(3);

    // The operator's ledger export, JSON and CSV.
    // The export's window is whole seconds.
    const second = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString();
    const [from, to] = [second(Date.now() - 3_600_000), second(Date.now() + 60_000)];
    const admin = (path: string) =>
      fetch(`${gateway.url}/admin/v1/orgs/${orgId}/wallet/${path}?from=${from}&to=${to}`, {
        headers: { authorization: 'Bearer test-operator-token-0123456789' },
      });
    const answer = await admin('ledger');
    expect(answer.status).toBe(200);
    const ledger = (await answer.json()) as { usage: Json[] };
    const exported = new Map(ledger.usage.map((u) => [u.request_id, u.batch_id]));
    for (const record of records) expect(exported.get(record.id)).toBe(batch.id);
    expect(exported.get(aloneId)).toBeNull();
    const ledgerCsv = csvRows(await (await admin('ledger.csv')).text());
    const inLedgerCsv = new Map(
      ledgerCsv.map((row) => [row[ledgerCsv[0]!.indexOf('request_id')], row[ledgerCsv[0]!.indexOf('batch_id')]]),
    );
    for (const record of records) expect(inLedgerCsv.get(record.id as string)).toBe(batch.id);

    // The portal's request list and its CSV.
    const { users } = gateway.services;
    await users.create({
      orgId,
      name: 'Owner',
      email: 'bounds-owner@example.com',
      password: 'bounds-owner-pw',
      role: 'owner',
    });
    const { cookie } = await signIn(gateway, 'bounds-owner@example.com', 'bounds-owner-pw');
    const portal = (path: string) =>
      fetch(`${gateway.url}/portal/${path}?window=this-month`, { headers: { cookie: cookie! } });
    expect(await (await portal('usage')).text()).toContain(`<code>${batch.id}</code>`);
    const csv = csvRows(await (await portal('usage.csv')).text());
    const column = csv[0]!.indexOf('batch_id');
    const byId = new Map(csv.map((row) => [row[1], row[column]]));
    for (const record of records) expect(byId.get(record.id as string)).toBe(batch.id);
    expect(byId.get(aloneId)).toBe('');
  }, 60_000);
});

/** A CSV's rows, split at commas: none of the cells read here holds one. */
function csvRows(text: string): string[][] {
  return text
    .trim()
    .split('\r\n')
    .map((row) => row.split(','));
}
