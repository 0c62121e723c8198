import net from 'node:net';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords, wallets } from '../../../src/shared/db/schema.js';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';

const STARTING_BALANCE = 5_000_000_000n;

/**
 * Writes one HTTP/1.1 request by hand on its own connection: the head, then the body in `pieces`
 * with a pause between them (a slow client, or a body larger than one socket read), or only its
 * first `cutAfter` bytes before the connection closes (a client that leaves mid-body). Resolves
 * with what came back: nothing when the connection closed first.
 */
function rawRequest(
  url: URL,
  secret: string,
  body: Buffer,
  options: { pieces?: number; cutAfter?: number },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString('utf8')));
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
    socket.on('connect', () => void send());
    const send = async () => {
      socket.write(
        `POST ${url.pathname}/chat/completions HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${secret}\r\n` +
          `content-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`,
      );
      if (options.cutAfter !== undefined) {
        socket.write(body.subarray(0, options.cutAfter));
        await new Promise((wait) => setTimeout(wait, 50));
        socket.destroy();
        return;
      }
      const pieces = options.pieces ?? 1;
      const size = Math.ceil(body.length / pieces);
      for (let at = 0; at < body.length; at += size) {
        socket.write(body.subarray(at, at + size));
        await new Promise((wait) => setTimeout(wait, 20));
      }
    };
  });
}

/**
 * The body of a request with a declared length is read straight from Node's request
 * (`readJsonObject`): whole however it arrives, and a client that leaves before its end leaves
 * nothing behind.
 */
describe('a request body of declared length', () => {
  let sim: RunningSimulator;
  let gateway: TestGateway;

  beforeAll(async () => {
    sim = await startSimulator({
      models: [{ name: 'sim-chat', task: 'chat', maxModelLen: 262_144 }],
      ttftMs: 0,
      itlMs: 0,
    });
    gateway = await startTestGateway('pglite', {}, { engines: { 'sim-chat': sim.url } });
  });
  afterAll(async () => {
    await gateway?.close();
    await sim?.close();
  });

  const body = (content: string) =>
    Buffer.from(JSON.stringify({ model: 'sim-chat', max_tokens: 8, messages: [{ role: 'user', content }] }));

  it('is read whole when it arrives in pieces, and billed as the engine counted it', async () => {
    const tenant = await gateway.tenant();
    const before = sim.stats();
    // 300 KB, in five writes 20 ms apart: several socket reads each.
    const answer = await rawRequest(new URL(gateway.baseURL), tenant.secret, body('héllo wörld '.repeat(25_000)), {
      pieces: 5,
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    const usage = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).usage;
    const after = sim.stats();
    expect(usage.prompt_tokens).toBe(after.promptTokens - before.promptTokens);
    expect(usage.completion_tokens).toBe(after.generationTokens - before.generationTokens);

    await gateway.charged();
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      status: 200,
      promptTokens: usage.prompt_tokens,
      completionTokens: usage.completion_tokens,
    });
  });

  it('leaves nothing behind when the client leaves mid-body: no engine call, no charge, no hold, and the next request is served', async () => {
    const tenant = await gateway.tenant();
    const before = sim.stats();
    const whole = body('x'.repeat(200_000));
    const answer = await rawRequest(new URL(gateway.baseURL), tenant.secret, whole, { cutAfter: 100_000 });
    expect(answer).toBe('');

    // The gateway goes on: the same key's next request is answered and billed.
    const next = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.secret}`, 'content-type': 'application/json' },
      body: body('hello'),
    });
    expect(next.status).toBe(200);
    await next.json();
    expect(sim.stats().completed).toBe(before.completed + 1);

    await gateway.charged();
    await until('no call of the organization is under way', async () => {
      return (await gateway.services.gateKeeper.gate.walletState(tenant.orgId)).holds.length === 0;
    });
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(records.map((record) => record.status)).toEqual([200]);
    const [wallet] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, tenant.orgId));
    expect(wallet!.balance).toBe(STARTING_BALANCE - records[0]!.cost);
  });
});
