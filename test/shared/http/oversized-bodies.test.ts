import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/processes.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

/** What a client script printed: the answer's status and body, or the error it got instead. */
interface ClientOutcome {
  status?: number;
  body?: string;
  error?: string;
}

/**
 * Runs a client in a Node process of its own, as a real client is (in the
 * gateway's own process its writes would be paced by the gateway's event loop,
 * which hides the EPIPE). `script` is an ES module that prints one JSON line.
 */
async function client(script: string, env: Record<string, string>): Promise<ClientOutcome> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  return JSON.parse(stdout) as ClientOutcome;
}

const FETCH_UPLOAD = `
  const form = new FormData();
  form.set('package', new Blob([new Uint8Array(Number(process.env.BYTES))], { type: 'application/zip' }), 'big.zip');
  const init = { method: 'POST', headers: { authorization: 'Bearer ' + process.env.KEY } };
  if (process.env.CHUNKED) {
    // No Content-Length: the body is a stream, sent chunked.
    let sent = 0;
    const chunk = new Uint8Array(256 * 1024);
    init.body = new ReadableStream({ pull(c) { if (sent >= Number(process.env.BYTES)) return c.close(); sent += chunk.length; c.enqueue(chunk); } });
    init.duplex = 'half';
    init.headers['content-type'] = 'multipart/form-data; boundary=x';
  } else init.body = form;
  await fetch(process.env.URL, init)
    .then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.text() })))
    .catch((e) => console.log(JSON.stringify({ error: String(e.cause?.code ?? e.cause ?? e) })));`;

const OPENAI_CHAT = `
  import OpenAI from 'openai';
  const openai = new OpenAI({ baseURL: process.env.URL, apiKey: process.env.KEY, maxRetries: 0 });
  await openai.chat.completions
    .create({ model: 'sim-chat', messages: [{ role: 'user', content: 'x'.repeat(Number(process.env.BYTES)) }] })
    .then(() => console.log(JSON.stringify({ status: 200 })))
    .catch((e) => {
      if (e instanceof OpenAI.APIError && e.status) return console.log(JSON.stringify({ status: e.status, body: JSON.stringify(e.error) }));
      // The socket's error is at the end of a chain (the SDK's error, fetch's TypeError, then undici's): every link is named.
      const links = [];
      for (let link = e; link; link = link.cause) links.push(String(link) + (link.code ? ' (' + link.code + ')' : ''));
      console.log(JSON.stringify({ error: links.join(' <- ') }));
    });`;

/**
 * A client that sends a body over a limit reads the 413 and its sentence.
 * Real clients (Node's fetch, which is undici, and the OpenAI SDK over it)
 * write the whole body before they read an answer: a socket closed while they
 * are still sending is an EPIPE for them, never the 413. The gateway reads and
 * discards what they still send, up to TOLLGATE_OVERSIZE_DRAIN_BYTES (and
 * TOLLGATE_OVERSIZE_DRAIN_MS), then answers and closes.
 */
describe('an oversized body gets its 413 read by real clients', () => {
  let gateway: TestGateway;
  let secret: string;
  let userKey: string;

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10' });
    ({ secret } = await gateway.tenant());
    const org = await gateway.services.orgs.create('uploads org');
    const user = await gateway.services.users.create({
      orgId: org.id,
      name: 'o',
      email: 'oversized@example.com',
      password: 'oversized-password',
      role: 'owner',
    });
    userKey = (await gateway.services.keys.create({ orgId: org.id, userId: user.id, name: 'k' })).secret;
  });
  afterAll(() => gateway?.close());

  it('Node fetch uploading 10.5 MiB to /v1/stacks reads the 413 and its message, three times out of three', async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const outcome = await client(FETCH_UPLOAD, {
        URL: `${gateway.url}/v1/stacks`,
        KEY: userKey,
        BYTES: String(10.5 * 1024 * 1024),
      });
      expect(outcome, `attempt ${attempt}`).toMatchObject({ status: 413 });
      expect(JSON.parse(outcome.body!).error).toMatchObject({
        code: 'PAYLOAD_TOO_LARGE',
        message: expect.stringMatching(/larger than the \d+-byte limit/),
      });
    }
  });

  it('Node fetch streaming 12 MiB to /v1/stacks without a Content-Length reads the 413', async () => {
    const outcome = await client(FETCH_UPLOAD, {
      URL: `${gateway.url}/v1/stacks`,
      KEY: userKey,
      BYTES: String(12 * 1024 * 1024),
      CHUNKED: '1',
    });
    expect(outcome).toMatchObject({ status: 413 });
    expect(JSON.parse(outcome.body!).error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('the OpenAI SDK sending 5 MiB to /v1/chat/completions (over TOLLGATE_MAX_BODY_BYTES) reads the 413 as an APIError, three times out of three', async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const outcome = await client(OPENAI_CHAT, { URL: gateway.baseURL, KEY: secret, BYTES: String(5 * 1024 * 1024) });
      expect(outcome, `attempt ${attempt}`).toMatchObject({ status: 413 });
      expect(JSON.parse(outcome.body!)).toMatchObject({
        code: 'request_too_large',
        message: expect.stringMatching(/larger than the \d+-byte limit/),
      });
    }
  });
});

describe('past TOLLGATE_OVERSIZE_DRAIN_BYTES the gateway stops reading', () => {
  let gateway: TestGateway;
  let secret: string;
  beforeAll(async () => {
    gateway = await startTestGateway('pglite', { TOLLGATE_OVERSIZE_DRAIN_BYTES: String(1024 * 1024) });
    ({ secret } = await gateway.tenant());
  });
  afterAll(() => gateway?.close());

  it('closes without reading a body longer than the drain, and goes on serving', async () => {
    const outcome = await client(OPENAI_CHAT, { URL: gateway.baseURL, KEY: secret, BYTES: String(8 * 1024 * 1024) });
    // The client may or may not get to read the 413 before the socket closes under it; either way
    // it is not left waiting.
    if (outcome.status !== undefined) expect(outcome.status).toBe(413);
    else expect(outcome.error).toMatch(/EPIPE|ECONNRESET|other side closed|SocketError/);
    expect((await fetch(`${gateway.url}/health`)).status).toBe(200);
  });
});
