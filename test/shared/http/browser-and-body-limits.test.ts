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
    const { port } = new URL(gateway.url);
    const result = await new Promise<{ status: number; body: string; sent: number }>((resolve, reject) => {
      let sent = 0;
      const request = http.request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/admin/v1/orgs',
          headers: { ...ADMIN, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        },
        (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode!, body, sent }));
        },
      );
      request.on('error', reject);
      const chunk = Buffer.alloc(64 * 1024, 'x');
      let answered = false;
      const pump = () => {
        // Up to 10 MB, but stop as soon as the gateway has answered.
        while (!answered && sent < 10 * 1024 * 1024 && request.write(chunk)) sent += chunk.length;
        if (answered || sent >= 10 * 1024 * 1024) request.end();
      };
      request.on('drain', pump);
      request.on('response', () => {
        answered = true;
        request.end();
      });
      pump();
    });
    expect(result.status).toBe(413);
    expect(JSON.parse(result.body).error.code).toBe('request_too_large');
    expect(result.sent).toBeLessThan(10 * 1024 * 1024);
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
      request.on('error', (error: NodeJS.ErrnoException) =>
        error.code === 'EPIPE' || error.code === 'ECONNRESET' ? undefined : reject(error),
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
