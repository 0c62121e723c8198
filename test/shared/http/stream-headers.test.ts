import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { headersWithFirstChunk, STREAM_HEADERS_WAIT_MS } from '../../../src/shared/http/request.js';
import { until } from '../../helpers/wait.js';

/**
 * A stream like a relayed engine's: its first chunk ready as soon as it is asked for, the next one
 * `laterMs` later.
 */
function engineLikeStream(firstAfterMs: number, laterMs = 30): ReadableStream<Uint8Array> {
  const chunks = ['data: first\n\n', 'data: second\n\n'];
  const encoder = new TextEncoder();
  let sent = 0;
  return new ReadableStream({
    async pull(controller) {
      if (sent === chunks.length) return controller.close();
      const wait = sent === 0 ? firstAfterMs : laterMs;
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      controller.enqueue(encoder.encode(chunks[sent++]));
    },
  });
}

/** The socket writes the server made on each connection, as text, in order. */
function recordWrites(server: ServerType): string[][] {
  const connections: string[][] = [];
  server.on('connection', (socket: Socket) => {
    const writes: string[] = [];
    connections.push(writes);
    // A socket's writes all go through _write or _writev (one system call each, or one attempt).
    type Write = (chunk: Buffer | string, encoding: BufferEncoding, callback: () => void) => void;
    type Writev = (chunks: Array<{ chunk: Buffer | string }>, callback: () => void) => void;
    const raw = socket as unknown as { _write: Write; _writev: Writev };
    const write = raw._write.bind(socket);
    const writev = raw._writev.bind(socket);
    raw._write = (chunk, encoding, callback) => {
      writes.push(chunk.toString());
      write(chunk, encoding, callback);
    };
    raw._writev = (chunks, callback) => {
      writes.push(chunks.map(({ chunk }) => chunk.toString()).join(''));
      writev(chunks, callback);
    };
  });
  return connections;
}

/** GETs `/` and returns when the headers and the first body bytes arrived (ms), and the body. */
function fetchTimed(port: number): Promise<{ headersAt: number; firstByteAt: number; body: string }> {
  const startedAt = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/' }, (response) => {
        const headersAt = performance.now() - startedAt;
        let firstByteAt = Number.NaN;
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (text: string) => {
          if (body === '') firstByteAt = performance.now() - startedAt;
          body += text;
        });
        response.on('end', () => resolve({ headersAt, firstByteAt, body }));
      })
      .on('error', reject);
  });
}

describe('a stream’s headers leave with its first chunk (headersWithFirstChunk)', () => {
  let server: ServerType | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  async function start(
    firstAfterMs: number,
    withHelper: boolean,
  ): Promise<{ port: number; writes: string[][]; handled: () => number }> {
    const app = new Hono();
    let handled = 0;
    app.get('/', (c) => {
      handled++;
      if (withHelper) headersWithFirstChunk(c);
      return c.body(engineLikeStream(firstAfterMs), 200, { 'content-type': 'text/event-stream' });
    });
    server = await new Promise<ServerType>((resolve) => {
      const started = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(started));
    });
    const writes = recordWrites(server);
    return { port: (server.address() as AddressInfo).port, writes, handled: () => handled };
  }

  it.each([0, 20])(
    'sends the headers and a first chunk that follows within %i ms in one write',
    async (firstAfterMs) => {
      const { port, writes } = await start(firstAfterMs, true);
      const { body } = await fetchTimed(port);
      expect(body).toBe('data: first\n\ndata: second\n\n');
      const first = writes[0]![0]!;
      expect(first).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(first).toContain('data: first');
    },
  );

  it('without it, @hono/node-server writes the headers alone (what the helper saves)', async () => {
    const { port, writes } = await start(0, false);
    await fetchTimed(port);
    expect(writes[0]![0]).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(writes[0]![0]).not.toContain('data: first');
  });

  it('still sends the headers at once when the first chunk is slow (a long prefill)', async () => {
    const { port, writes } = await start(300, true);
    const { headersAt, firstByteAt, body } = await fetchTimed(port);
    expect(body).toBe('data: first\n\ndata: second\n\n');
    expect(headersAt).toBeGreaterThanOrEqual(STREAM_HEADERS_WAIT_MS - 5);
    expect(headersAt).toBeLessThan(firstByteAt - 200);
    expect(writes[0]![0]).not.toContain('data: first');
  });

  it('does nothing when the client left before the headers went', async () => {
    const { port, handled } = await start(100, true);
    const request = http.get({ host: '127.0.0.1', port, path: '/' });
    const closed = new Promise<void>((resolve) => request.on('close', () => resolve()));
    request.on('error', () => {});
    await until('the server is handling the request', () => handled() === 1, { interval: 1 });
    // Gone before the deferred flush is due (in the usual case); the server must not throw on its
    // destroyed response.
    request.destroy();
    await closed;
    // A later request's answer ends after the first one's flush was due (its first chunk comes 100
    // ms after it began): the marker that the flush has run. The server still answers whole, and a
    // throw in the flush would fail the file.
    const { body } = await fetchTimed(port);
    expect(body).toBe('data: first\n\ndata: second\n\n');
    expect(handled()).toBe(2);
  });
});
