import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchFile, chatLine, startBatch } from '../../helpers/batches.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';

/**
 * A batch whose key is at its limits, on the embedded store: its lines wait, and every other
 * tenant's request is answered meanwhile. Before, the runner claimed and refused its lines in a
 * chain of promises that never let a request in: the gateway stopped answering anyone.
 */
describe('a batch under a key at its limits', () => {
  let gateway: TestGateway;
  let client: OpenAI;
  let neighbour: string;

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', { TOLLGATE_BATCHES_CONCURRENCY: '32' });
    const mine = await gateway.tenant({ credit: '10.00', key: { requestsPerMinute: 8, maxConcurrency: 2 } });
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: mine.secret, maxRetries: 0 });
    neighbour = (await gateway.tenant({ credit: '10.00' })).secret;
  }, 120_000);
  afterAll(async () => {
    await gateway?.close();
  });

  it('waits for its key while another tenant is answered at once', async () => {
    const batch = await startBatch(client, batchFile(100, '/v1/chat/completions', chatLine), '/v1/chat/completions');
    await until(
      'the batch runs',
      async () => (await gateway.services.batches.store.byId(batch.id))?.status === 'in_progress',
      {
        timeout: 30_000,
      },
    );
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      const answer = await fetch(`${gateway.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${neighbour}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-chat', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }),
        signal: AbortSignal.timeout(10_000),
      });
      expect(answer.status).toBe(200);
      await answer.arrayBuffer();
      expect(performance.now() - started).toBeLessThan(5_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    const now = await gateway.services.batches.store.byId(batch.id);
    // Within the key's 8 requests a minute (its upload and batch took two): the rest wait, none
    // failed for it.
    expect(now!.completed).toBeLessThanOrEqual(6);
    expect(now!.failed).toBe(0);
  }, 90_000);
});
