import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/shared/http/errors.js';
import { MultipartReader } from '../../../src/shared/http/multipart.js';

/** `bytes` in pieces of `size`, one per read. */
async function* pieces(bytes: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

/** A form as Node's fetch writes it: its bytes and its boundary. */
async function encoded(form: FormData): Promise<{ bytes: Buffer; boundary: string }> {
  const request = new Request('http://127.0.0.1/', { method: 'POST', body: form });
  const boundary = MultipartReader.boundaryOf(request.headers.get('content-type') ?? undefined)!;
  return { bytes: Buffer.from(await request.arrayBuffer()), boundary };
}

async function partsOf(bytes: Buffer, boundary: string, size: number) {
  const reader = new MultipartReader(pieces(bytes, size)[Symbol.asyncIterator](), boundary);
  const parts: Array<{ name: string; filename: string | null; body: string }> = [];
  for (let head = await reader.next(); head; head = await reader.next()) {
    const chunks: Buffer[] = [];
    for await (const chunk of reader.body()) chunks.push(Buffer.from(chunk));
    parts.push({ ...head, body: Buffer.concat(chunks).toString('latin1') });
  }
  return parts;
}

describe('MultipartReader', () => {
  // Bytes that look like a boundary's start, split across reads, must stay data.
  const tricky = `line one\r\n--not the boundary\r\n-\r\n--${'x'.repeat(70)}\r\n\r\n`;
  const form = new FormData();
  form.set('purpose', 'batch');
  form.set('file', new Blob([Buffer.from(tricky.repeat(50), 'latin1')]), 'my "input".jsonl');
  form.set('empty', new Blob([]), 'empty.bin');

  for (const size of [1, 7, 64, 1_000_000]) {
    it(`reads every part whole, read in pieces of ${size} bytes`, async () => {
      const { bytes, boundary } = await encoded(form);
      const parts = await partsOf(bytes, boundary, size);
      expect(parts.map(({ name, filename }) => ({ name, filename }))).toEqual([
        { name: 'purpose', filename: null },
        // Node's FormData writes a quote in a file name as %22.
        { name: 'file', filename: 'my %22input%22.jsonl' },
        { name: 'empty', filename: 'empty.bin' },
      ]);
      expect(parts[0]!.body).toBe('batch');
      expect(parts[1]!.body).toBe(tricky.repeat(50));
      expect(parts[2]!.body).toBe('');
    });
  }

  it('skips a part its reader does not read, a preamble, and reads quoted and encoded names', async () => {
    const boundary = 'b0undary';
    const text = [
      'a preamble, ignored',
      `--${boundary}`,
      'Content-Disposition: form-data; name="skipped"',
      '',
      'x'.repeat(10_000),
      `--${boundary}`,
      `Content-Disposition: form-data; name="file"; filename="a\\"b.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9.txt`,
      'Content-Type: text/plain',
      '',
      'kept',
      `--${boundary}--`,
      'an epilogue',
    ].join('\r\n');
    const reader = new MultipartReader(pieces(Buffer.from(text), 13)[Symbol.asyncIterator](), boundary);
    expect(await reader.next()).toEqual({ name: 'skipped', filename: null });
    expect(await reader.next()).toEqual({ name: 'file', filename: 'résumé.txt' });
    const chunks: Buffer[] = [];
    for await (const chunk of reader.body()) chunks.push(chunk);
    expect(Buffer.concat(chunks).toString()).toBe('kept');
    expect(await reader.next()).toBeNull();
  });

  it('refuses a form cut short, one without a boundary and a part without a name, with 400', async () => {
    const { bytes, boundary } = await encoded(form);
    const cut = bytes.subarray(0, bytes.length - 30);
    await expect(partsOf(cut, boundary, 100)).rejects.toBeInstanceOf(GatewayError);
    await expect(partsOf(Buffer.from('no boundary at all'), boundary, 5)).rejects.toMatchObject({ status: 400 });
    const nameless = `--${boundary}\r\nContent-Disposition: form-data\r\n\r\nx\r\n--${boundary}--\r\n`;
    await expect(partsOf(Buffer.from(nameless), boundary, 5)).rejects.toThrow('without a name');
    const endless = `--${boundary}\r\nContent-Disposition: form-data; name="a"\r\n${'X-Pad: y\r\n'.repeat(5000)}`;
    await expect(partsOf(Buffer.from(endless), boundary, 512)).rejects.toThrow('headers too long');
  });

  it('reads the boundary of a multipart/form-data type only', () => {
    expect(MultipartReader.boundaryOf('multipart/form-data; boundary=abc')).toBe('abc');
    expect(MultipartReader.boundaryOf('multipart/form-data; boundary="a b"')).toBe('a b');
    expect(MultipartReader.boundaryOf('application/json')).toBeNull();
    expect(MultipartReader.boundaryOf('multipart/form-data')).toBeNull();
    expect(MultipartReader.boundaryOf(undefined)).toBeNull();
  });
});
