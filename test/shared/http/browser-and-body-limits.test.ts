import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MANAGEMENT_MAX_BODY_BYTES } from '../../../src/shared/http/request.js';
import { expectError } from '../../helpers/envelope.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const ADMIN = { authorization: 'Bearer test-operator-token-0123456789' };

describe('CORS: browsers may call /v1 from allowed origins, never /admin', () => {
  let gateway: TestGateway;
  let secret: string;
  beforeAll(async () => {
    gateway = await startTestGateway('pglite', {
      TOLLGATE_CORS_ORIGINS: 'https://app.example.com, https://other.example.com',
    });
    ({ secret } = await gateway.tenant());
  });
  afterAll(() => gateway?.close());

  const preflight = (path: string, origin: string) =>
    fetch(`${gateway.url}${path}`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, x-stainless-os',
      },
    });

  it('answers a preflight from an allowed origin with 204 and the headers a client sends, without credentials', async () => {
    const response = await preflight('/v1/chat/completions', 'https://app.example.com');
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(response.headers.get('access-control-allow-methods')).toContain('POST');
    expect(response.headers.get('access-control-allow-headers')).toBe('authorization,content-type,x-stainless-os');
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('allows no other origin', async () => {
    const response = await preflight('/v1/chat/completions', 'https://evil.example.net');
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('lets the page read the request id and limit headers of a real answer', async () => {
    const response = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: {
        origin: 'https://other.example.com',
        authorization: `Bearer ${secret}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe('https://other.example.com');
    expect(response.headers.get('access-control-expose-headers')).toMatch(
      /x-request-id.*x-ratelimit-remaining-requests/,
    );
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('sends no CORS headers to a POST without an Origin (an SDK or a server, not a browser), and the same answer otherwise', async () => {
    const response = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
    expect(response.headers.get('x-ratelimit-remaining-requests')).toMatch(/^\d+$/);
    expect(((await response.json()) as { object: string }).object).toBe('chat.completion');
  });

  it('sends the same headers on a stream', async () => {
    for (const origin of ['https://other.example.com', undefined]) {
      const response = await fetch(`${gateway.baseURL}/chat/completions`, {
        method: 'POST',
        headers: {
          ...(origin ? { origin } : {}),
          authorization: `Bearer ${secret}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ model: 'sim-chat', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      expect(response.headers.get('x-request-id')).toMatch(/^req_/);
      expect(response.headers.get('x-ratelimit-remaining-requests')).toMatch(/^\d+$/);
      expect(response.headers.get('access-control-allow-origin')).toBe(origin ?? null);
      expect((await response.text()).endsWith('data: [DONE]\n\n')).toBe(true);
    }
  });

  it('sends no CORS headers on /admin/v1 or /health', async () => {
    for (const path of ['/admin/v1/orgs', '/health']) {
      const response = await preflight(path, 'https://app.example.com');
      expect(response.headers.get('access-control-allow-origin')).toBeNull();
      expect(response.status).not.toBe(204);
    }
  });
});

describe('TOLLGATE_CORS_ORIGINS=none', () => {
  let gateway: TestGateway;
  beforeAll(async () => (gateway = await startTestGateway('pglite', { TOLLGATE_CORS_ORIGINS: 'none' })));
  afterAll(() => gateway?.close());

  it('sends no CORS headers on /v1', async () => {
    const response = await fetch(`${gateway.baseURL}/models`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET' },
    });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('management request bodies are bounded', () => {
  let gateway: TestGateway;
  // Nothing of a refused body is read to let the client finish (oversized-bodies.test.ts has the
  // drain): what is read is only what counts.
  beforeAll(async () => (gateway = await startTestGateway('pglite', { TOLLGATE_OVERSIZE_DRAIN_BYTES: '0' })));
  afterAll(() => gateway?.close());

  it('refuses a 10 MB body with a Content-Length: 413 in the envelope', async () => {
    const response = await fetch(`${gateway.url}/admin/v1/orgs`, {
      method: 'POST',
      headers: { ...ADMIN, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x'.repeat(10 * 1024 * 1024) }),
    });
    await expectError(response, 413, 'request_too_large', 'invalid_request_error');
  });

  it('refuses a chunked body with no Content-Length once it passes the limit, without reading it all', async () => {
    // The gateway answers and closes while the client is still writing: a write can then fail with
    // EPIPE or ECONNRESET before the answer is read, and a client that loses the answer so sends
    // again, as real ones do. Every attempt stops short of the 10 MB; one reads the 413.
    const attempts: ChunkedAttempt[] = [];
    while (attempts.length < 5 && !attempts.some((attempt) => attempt.status !== undefined)) {
      attempts.push(await sendChunked(`${gateway.url}/admin/v1/orgs`, 10 * 1024 * 1024));
    }
    for (const attempt of attempts) {
      expect(attempt.sent, JSON.stringify(attempt)).toBeLessThan(10 * 1024 * 1024);
      if (attempt.status === undefined) expect(['EPIPE', 'ECONNRESET']).toContain(attempt.writeError);
    }
    const answered = attempts.find((attempt) => attempt.status !== undefined);
    expect(answered, JSON.stringify(attempts)).toBeDefined();
    expect(answered!.status).toBe(413);
    expect(JSON.parse(answered!.body).error.code).toBe('request_too_large');
  });

  it('still takes a body under the limit', async () => {
    const response = await fetch(`${gateway.url}/admin/v1/orgs`, {
      method: 'POST',
      headers: { ...ADMIN, 'content-type': 'application/json' },
      // Whitespace is valid JSON padding: the body is large, the org is small.
      body: `${JSON.stringify({ name: 'fits' })}${' '.repeat(MANAGEMENT_MAX_BODY_BYTES / 2)}`,
    });
    expect(response.status).toBe(201);
  });
});

describe('a 413 leaves a keep-alive client able to go on', () => {
  let gateway: TestGateway;
  let secret: string;
  let userKey: string;
  beforeAll(async () => {
    gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10' });
    ({ secret } = await gateway.tenant());
    const org = await gateway.services.orgs.create('keep-alive org');
    const user = await gateway.services.users.create({
      orgId: org.id,
      name: 'o',
      email: 'keep-alive@example.com',
      password: 'keep-alive-password',
      role: 'owner',
    });
    userKey = (await gateway.services.keys.create({ orgId: org.id, userId: user.id, name: 'k' })).secret;
  });
  afterAll(() => gateway?.close());

  /** One request on `agent`; answers the status, the Connection header and the socket it went over. */
  const send = (agent: http.Agent, path: string, headers: Record<string, string>, body?: string) =>
    new Promise<{ status: number; connection: string | undefined; socket: unknown }>((resolve, reject) => {
      const request = http.request(
        `${gateway.url}${path}`,
        { agent, method: body === undefined ? 'GET' : 'POST', headers },
        (response) => {
          response.resume();
          response.on('end', () =>
            resolve({ status: response.statusCode!, connection: response.headers.connection, socket: request.socket }),
          );
        },
      );
      // The gateway answers before the client has sent the whole body; what it does with the rest
      // is the point.
      let writeError: string | undefined;
      request.on('error', (error: NodeJS.ErrnoException) =>
        error.code === 'EPIPE' || error.code === 'ECONNRESET' ? (writeError = error.code) : reject(error),
      );
      // Without an answer the test would wait for its own timeout: say what happened instead.
      request.on('close', () =>
        reject(new Error(`the connection closed with no answer (${writeError ?? 'no write error'})`)),
      );
      request.end(body);
    });

  it.each([
    ['/v1/chat/completions', () => `Bearer ${secret}`],
    ['/api/v1/projects', () => `Bearer ${userKey}`],
    ['/v1/stacks', () => `Bearer ${userKey}`],
    ['/admin/v1/orgs', () => ADMIN.authorization],
    ['/auth/sign-in', () => ''],
  ])('POST %s: a 413 says Connection: close, or keeps serving on the same connection', async (path, authorization) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const big = JSON.stringify({ name: 'x'.repeat(11 * 1024 * 1024) });
      const refused = await send(
        agent,
        path,
        { authorization: authorization(), 'content-type': 'application/json' },
        big,
      );
      expect(refused.status).toBe(413);
      const next = await send(agent, '/health', {});
      expect(next.status).toBe(200);
      // Announcing keep-alive and then closing is what broke clients (UND_ERR_SOCKET on their next
      // request).
      if (refused.connection !== 'close') expect(next.socket).toBe(refused.socket);
    } finally {
      agent.destroy();
    }
  });
});

interface ChunkedAttempt {
  status?: number;
  body: string;
  sent: number;
  writeError?: string;
}

/**
 * POSTs up to `limit` bytes of chunked body to `url`, a chunk per turn of the event loop so the
 * answer is read as soon as it comes, stopping once it has. The server may close while a chunk is
 * on its way: the write's EPIPE or ECONNRESET is kept, not thrown, and whatever answer came is
 * read.
 */
function sendChunked(url: string, limit: number): Promise<ChunkedAttempt> {
  return new Promise((resolve, reject) => {
    const attempt: ChunkedAttempt = { body: '', sent: 0 };
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      resolve(attempt);
    };
    const request = http.request(url, {
      method: 'POST',
      headers: { ...ADMIN, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    });
    request.on('response', (response) => {
      attempt.status = response.statusCode!;
      response.on('data', (chunk: Buffer) => (attempt.body += chunk.toString()));
      response.on('end', settle);
      response.on('error', settle);
      response.on('close', settle);
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') return reject(error);
      attempt.writeError = error.code;
      // An answer already under way ends by its own 'end' or 'error'.
      if (attempt.status === undefined) settle();
    });
    request.on('close', () => attempt.status === undefined && settle());
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const pump = () => {
      if (request.destroyed || attempt.writeError) return;
      if (attempt.status !== undefined || attempt.sent >= limit) return void request.end();
      attempt.sent += chunk.length;
      request.write(chunk, () => setImmediate(pump));
    };
    pump();
  });
}
