import http from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const stores = await availableStores();

/** The upload's size: a quarter of OpenAI's 200 MB (bench/files-upload.ts does the whole). */
const FILE_BYTES = 50 * 1024 * 1024;
/**
 * What the process may grow by while it streams the file in or out: well under the file (a gateway
 * that held it grows by all of it). Measured here: 4-15 MB up, 11-20 MB down (allocator pages, not
 * held objects).
 */
const MAX_GROWTH_BYTES = 30 * 1024 * 1024;

/** One batch line, padded so that lines of it make `FILE_BYTES` in under 50,000 lines. */
function line(i: number): string {
  const head = JSON.stringify({
    custom_id: `req-${i}`,
    method: 'POST',
    url: '/v1/embeddings',
    body: { model: 'sim-embed', input: '' },
  });
  return head.replace('"input":""', `"input":"${'x'.repeat(1100 - head.length)}"`) + '\n';
}

/** A batch file of `bytes`, made as it is read: the test holds no copy of it. */
function streamedFile(bytes: number): ReadableStream<Uint8Array> {
  let sent = 0;
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      const lines: string[] = [];
      for (let size = 0; size < 64 * 1024 && sent + size < bytes;) {
        const next = line(++i);
        lines.push(next);
        size += next.length;
      }
      if (lines.length === 0) return controller.close();
      const chunk = Buffer.from(lines.join(''));
      sent += chunk.length;
      controller.enqueue(chunk);
    },
  });
}

/** A form of one file part, streamed: its head, the file, its tail. */
function streamedForm(boundary: string, file: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  const reader = file.getReader();
  let stage: 'head' | 'file' | 'done' = 'head';
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (stage === 'head') {
        stage = 'file';
        return controller.enqueue(Buffer.from(head));
      }
      if (stage === 'done') return controller.close();
      const { done, value } = await reader.read();
      if (!done) return controller.enqueue(value);
      stage = 'done';
      controller.enqueue(Buffer.from(tail));
    },
  });
}

// A full collection before each sample: what is measured is what is held, not garbage not yet
// collected.
v8.setFlagsFromString('--expose-gc');
const collect = vm.runInNewContext('gc') as () => void;

function heldBytes(): number {
  collect();
  return process.memoryUsage().rss;
}

/**
 * The process's highest resident memory over `work`, sampled every 250 ms after a collection, less
 * before.
 */
async function growthDuring(work: () => Promise<void>): Promise<number> {
  const before = heldBytes();
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, heldBytes());
  }, 250);
  try {
    await work();
  } finally {
    clearInterval(sampler);
  }
  return Math.max(peak, heldBytes()) - before;
}

/**
 * A POST of `body` through Node's own client, which writes as the socket takes it. (Node's fetch,
 * in this process, would buffer the upload itself, and its memory would be counted as the
 * gateway's.)
 */
function send(
  url: string,
  headers: Record<string, string>,
  body: ReadableStream<Uint8Array>,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (part: string) => (text += part));
      response.on('end', () => resolve({ status: response.statusCode!, text }));
    });
    request.on('error', reject);
    pipeline(Readable.fromWeb(body), request).catch(reject);
  });
}

/** A GET whose body is read and dropped as it arrives: how many bytes. */
function received(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (response) => {
        if (response.statusCode !== 200) reject(new Error(`status ${response.statusCode}`));
        let bytes = 0;
        response.on('data', (chunk: Buffer) => (bytes += chunk.length));
        response.on('end', () => resolve(bytes));
      })
      .on('error', reject);
  });
}

describe.each(stores)('/v1/files memory (%s)', (kind) => {
  let gateway: TestGateway;
  let secret: string;

  beforeAll(async () => {
    gateway = await startTestGateway(kind);
    ({ secret } = await gateway.tenant());
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
  });

  it(`streams a ${FILE_BYTES / 1024 / 1024} MB batch file in and out with memory flat`, async () => {
    let id = '';
    // Warm up the path (the first upload loads code and fills pools), then measure.
    for (const bytes of [1024 * 1024, FILE_BYTES]) {
      const boundary = `bound${Math.random().toString(36).slice(2)}`;
      const growth = await growthDuring(async () => {
        const answer = await send(
          `${gateway.baseURL}/files`,
          {
            authorization: `Bearer ${secret}`,
            'content-type': `multipart/form-data; boundary=${boundary}`,
          },
          streamedForm(boundary, streamedFile(bytes)),
        );
        const body = JSON.parse(answer.text) as { id: string; bytes: number };
        expect(answer.status, answer.text).toBe(200);
        expect(body.bytes).toBeGreaterThanOrEqual(bytes);
        id = body.id;
      });
      if (bytes === FILE_BYTES) expect(growth).toBeLessThan(MAX_GROWTH_BYTES);
    }
    let read = 0;
    const growth = await growthDuring(async () => {
      read = await received(`${gateway.baseURL}/files/${id}/content`, { authorization: `Bearer ${secret}` });
    });
    expect(read).toBeGreaterThanOrEqual(FILE_BYTES);
    expect(growth).toBeLessThan(MAX_GROWTH_BYTES);
  }, 120_000);
});
