import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchFile, chatLine } from '../../helpers/batches.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

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
describe('batches: bad input bounded, every charge shown', () => {
  let gateway: TestGateway;
  let client: OpenAI;
  let secret: string;

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', {
      TOLLGATE_BATCHES_CONCURRENCY: '16',
      TOLLGATE_SIM_TTFT_MS: '20',
      TOLLGATE_SIM_ITL_MS: '10',
      TOLLGATE_PASSWORD_COST: '10',
    });
    const tenant = await gateway.tenant({
      credit: '100.00',
      key: { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 },
    });
    ({ secret } = tenant);
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
  });

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
});
