import { createServer, type Server } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wallets } from '../../../src/shared/db/schema.js';
import { expectError } from '../../helpers/envelope.js';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const stores = await oneStore();
const ADMIN = { authorization: 'Bearer test-operator-token-0123456789', 'content-type': 'application/json' };

/** An engine that answers 200 with a body that is not JSON. */
function startGarbageEngine(): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/health') return res.end('ok');
      res.setHeader('content-type', 'text/html');
      res.end('<html>upstream proxy error at 10.0.0.7</html>');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

describe.each(stores)('bad input is a 4xx with the envelope, never a 5xx (%s)', (store) => {
  let gateway: TestGateway;
  let engine: Server;
  let dir: string;
  let secret: string;
  let orgId: string;

  beforeAll(async () => {
    engine = await startGarbageEngine();
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-bad-input-'));
    const enginesFile = path.join(dir, 'engines.json');
    const url = `http://127.0.0.1:${(engine.address() as AddressInfo).port}`;
    await writeFile(
      enginesFile,
      JSON.stringify({
        engines: [
          { kind: 'simulator', model: 'sim-chat' },
          { kind: 'simulator', model: 'sim-embed', task: 'embedding', max_model_len: 512 },
          { kind: 'static', model: 'sim-reasoner', url },
        ],
      }),
    );
    gateway = await startTestGateway(store, { TOLLGATE_ENGINES_FILE: enginesFile, TOLLGATE_MAX_JSON_DEPTH: '16' });
    ({ secret, orgId } = await gateway.tenant());
  });
  afterAll(async () => {
    await gateway?.close();
    await new Promise((resolve) => engine?.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const post = (route: string, body: string) =>
    fetch(`${gateway.baseURL}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body,
    });

  it('a model name with a NUL character', async () => {
    await expectError(
      await post(
        '/chat/completions',
        JSON.stringify({ model: 'sim\u0000chat', messages: [{ role: 'user', content: 'hi' }] }),
      ),
      400,
      'model_not_found',
      'invalid_request_error',
    );
    await expectError(
      await post('/embeddings', JSON.stringify({ model: 'sim\u0000embed', input: 'hi' })),
      400,
      'model_not_found',
      'invalid_request_error',
    );
  });

  it('a model name with a lone surrogate', async () => {
    await expectError(
      await post('/chat/completions', '{"model":"sim\\ud800chat","messages":[{"role":"user","content":"hi"}]}'),
      400,
      'model_not_found',
      'invalid_request_error',
    );
  });

  it.each(['%FF', 'a%00b', '%E0%A4%A', 'sim%00chat/x'])('GET /v1/models/%s', async (id) => {
    const response = await fetch(`${gateway.baseURL}/models/${id}`, { headers: { authorization: `Bearer ${secret}` } });
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
    expect(((await response.json()) as { error: { code: string } }).error.code).toMatch(
      /^(model_not_found|not_found|invalid_request)$/,
    );
  });

  it('an organization name, project name or note with a NUL character', async () => {
    for (const [route, body] of [
      ['/orgs', { name: 'bad\u0000name' }],
      [`/orgs/${orgId}/projects`, { name: 'bad\u0000project' }],
      [`/orgs/${orgId}/wallet/topups`, { amount: '1.00', note: 'bad\u0000note' }],
      [`/orgs/${orgId}/keys`, { name: 'bad\u0000key' }],
    ] as const) {
      const response = await fetch(`${gateway.url}/admin/v1${route}`, {
        method: 'POST',
        headers: ADMIN,
        body: JSON.stringify(body),
      });
      const error = await expectError(response, 400, 'invalid_request', 'invalid_request_error');
      expect(JSON.stringify(error.details)).toContain('field');
    }
  });

  it('a body nested 100,000 arrays deep', async () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const body = `{"model":"sim-chat","messages":[{"role":"user","content":"hi"}],"extra":${deep}}`;
    await expectError(await post('/chat/completions', body), 400, 'invalid_request', 'invalid_request_error');
    await expectError(
      await fetch(`${gateway.url}/admin/v1/orgs`, {
        method: 'POST',
        headers: ADMIN,
        body: `{"name":"x","extra":${deep}}`,
      }),
      400,
      'invalid_request',
      'invalid_request_error',
    );
  });

  it('a body past TOLLGATE_MAX_JSON_DEPTH, on chat and on the translated routes: 400 naming the setting', async () => {
    const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
    const routes: Array<[string, string]> = [
      ['/chat/completions', '{"model":"sim-chat","messages":[{"role":"user","content":"hi"}]'],
      ['/messages', '{"model":"sim-chat","max_tokens":5,"messages":[{"role":"user","content":"hi"}]'],
      ['/messages/count_tokens', '{"model":"sim-chat","messages":[{"role":"user","content":"hi"}]'],
      ['/responses', '{"model":"sim-chat","input":"hi"'],
    ];
    for (const [route, start] of routes) {
      const refused = await post(route, `${start},"metadata":{"x":${nested(20)}}}`);
      const error = await expectError(refused, 400, 'invalid_request', 'invalid_request_error');
      expect(error.message).toContain('TOLLGATE_MAX_JSON_DEPTH');
      // Within the bound, the depth is not what is refused.
      const within = await post(route, `${start},"metadata":{"x":${nested(8)}}}`);
      if (within.status === 400)
        expect(((await within.json()) as { error: { message: string } }).error.message).not.toContain('nests deeper');
      else await within.body?.cancel();
    }
  });

  it('an engine answer that is not JSON: 502 with a fixed message, and the hold given back', async () => {
    for (const stream of [false]) {
      const response = await post(
        '/chat/completions',
        JSON.stringify({ model: 'sim-reasoner', stream, messages: [{ role: 'user', content: 'hi' }] }),
      );
      const error = await expectError(response, 502, 'upstream_error', 'upstream_error');
      expect(error.message).not.toMatch(/10\.0\.0\.7|html/);
    }
    const [wallet] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, orgId));
    expect(wallet!.balance).toBeGreaterThan(0n);
    expect((await gateway.services.gateKeeper.gate.walletState(orgId)).holds).toEqual([]);
  });
});
