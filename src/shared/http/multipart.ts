import { GatewayError } from './errors.js';

/** A part's headers as a form upload has them. */
export interface PartHead {
  name: string;
  /** The file's name for a file part; null for a plain field. */
  filename: string | null;
}

/** The most bytes one part's headers may take: a browser's or an SDK's are a few hundred. */
const MAX_HEAD_BYTES = 16 * 1024;

/**
 * Reads `multipart/form-data` as it arrives, never holding more than a chunk
 * and a boundary's length: `next()` gives each part's headers (skipping what
 * is left of the part before), `body()` its bytes as they come. Hono's
 * `parseBody` buffers the whole form (`Request.formData()`), which a 200 MB
 * upload cannot afford. A malformed form is a 400 `invalid_request`.
 *
 * @example
 * const form = new MultipartReader(chunks, MultipartReader.boundaryOf(contentType)!);
 * for (let part = await form.next(); part; part = await form.next()) for await (const bytes of form.body()) …
 */
export class MultipartReader {
  private buffer: Buffer;
  private readonly delimiter: Buffer;
  private state: 'preamble' | 'delimited' | 'body' | 'end' = 'preamble';

  constructor(
    private readonly source: AsyncIterator<Uint8Array, unknown>,
    boundary: string,
  ) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
    // The first boundary has no line break before it: one is put there, so every boundary reads
    // alike.
    this.buffer = Buffer.from('\r\n', 'latin1');
  }

  /** The boundary of a `multipart/form-data` Content-Type; null for any other type or none. */
  static boundaryOf(contentType: string | undefined): string | null {
    if (!contentType || !/^\s*multipart\/form-data\s*;/i.test(contentType)) return null;
    const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;"]{1,70}))/i.exec(contentType);
    return match ? (match[1] ?? match[2]!) : null;
  }

  /**
   * The next part's headers, what is left of the current part read and dropped first; null after
   * the last.
   */
  async next(): Promise<PartHead | null> {
    if (this.state === 'body') for await (const _ of this.body());
    if (this.state === 'end') return null;
    if (this.state === 'preamble') {
      await this.consumeThrough(this.delimiter, Number.POSITIVE_INFINITY, 'has no boundary');
      this.state = 'delimited';
    }
    await this.fill(2);
    if (this.buffer.subarray(0, 2).toString('latin1') === '--') {
      this.state = 'end';
      return null;
    }
    const head = await this.consumeThrough(Buffer.from('\r\n\r\n'), MAX_HEAD_BYTES, "has a part's headers too long");
    this.state = 'body';
    return headOf(head.toString('utf8'));
  }

  /**
   * The current part's bytes as they arrive (each chunk is the reader's until the next is asked
   * for).
   */
  async *body(): AsyncGenerator<Buffer> {
    if (this.state !== 'body') return;
    const keep = this.delimiter.length - 1;
    for (;;) {
      const at = this.buffer.indexOf(this.delimiter);
      if (at >= 0) {
        const last = this.buffer.subarray(0, at);
        this.buffer = this.buffer.subarray(at + this.delimiter.length);
        this.state = 'delimited';
        if (last.length > 0) yield last;
        return;
      }
      if (this.buffer.length > keep) {
        const ready = this.buffer.subarray(0, this.buffer.length - keep);
        this.buffer = this.buffer.subarray(this.buffer.length - keep);
        yield ready;
      }
      if (!(await this.pull())) throw malformed('ends inside a part');
    }
  }

  /**
   * Reads up to and past `marker`, at most `max` bytes before it; what came before it (a part's
   * headers).
   */
  private async consumeThrough(marker: Buffer, max: number, problem: string): Promise<Buffer> {
    for (let from = 0; ;) {
      const at = this.buffer.indexOf(marker, from);
      if (at >= 0) {
        const before = this.buffer.subarray(0, at);
        this.buffer = this.buffer.subarray(at + marker.length);
        return before;
      }
      if (this.buffer.length > max) throw malformed(problem);
      from = Math.max(0, this.buffer.length - marker.length + 1);
      // Before the first boundary only the last bytes are kept: a preamble is never held.
      if (max === Number.POSITIVE_INFINITY && from > 0) {
        this.buffer = this.buffer.subarray(from);
        from = 0;
      }
      if (!(await this.pull())) throw malformed(problem);
    }
  }

  private async fill(bytes: number): Promise<void> {
    while (this.buffer.length < bytes) if (!(await this.pull())) throw malformed('ends before its last boundary');
  }

  private async pull(): Promise<boolean> {
    const next = await this.source.next();
    if (next.done) return false;
    const value = next.value;
    const chunk = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    return true;
  }
}

/**
 * A part's name and file name, from its Content-Disposition (`form-data; name="file";
 * filename="a.jsonl"`).
 */
function headOf(head: string): PartHead {
  let disposition: string | undefined;
  for (const line of head.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === 'content-disposition')
      disposition = line.slice(colon + 1).trim();
  }
  if (!disposition || !/^form-data\b/i.test(disposition)) throw malformed('has a part without form-data disposition');
  const params = new Map<string, string>();
  const param = /;\s*([A-Za-z0-9_*-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]*))/g;
  for (let match = param.exec(disposition); match; match = param.exec(disposition))
    params.set(match[1]!.toLowerCase(), match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : match[3]!);
  const name = params.get('name');
  if (name === undefined) throw malformed('has a part without a name');
  const encoded = params.get('filename*');
  const filename = encoded !== undefined ? extendedValue(encoded) : (params.get('filename') ?? null);
  return { name, filename };
}

/** RFC 5987's `UTF-8''a%20b.jsonl`. */
function extendedValue(value: string): string {
  const quote = value.indexOf("''");
  try {
    return decodeURIComponent(quote >= 0 ? value.slice(quote + 2) : value);
  } catch {
    throw malformed('has a file name that is not well encoded');
  }
}

function malformed(problem: string): GatewayError {
  return new GatewayError('invalid_request', `The multipart/form-data body ${problem}.`, {
    details: [{ field: 'body', message: problem }],
  });
}
