import { createHash } from 'node:crypto';
import { GatewayError } from '../../shared/http/errors.js';
import { checkJsonShape } from '../../shared/http/json-shape.js';

/** The endpoints a batch's line may call, as OpenAI's Batch API names them. */
export const BATCH_URLS = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses'] as const;

/** A problem of one line, numbered from 1 as an editor numbers them. */
export interface LineProblem {
  line: number;
  message: string;
}

/** The longest `custom_id` kept: ids are the client's own, and each is held until the file's end. */
const MAX_CUSTOM_ID_CHARS = 512;
/** The problems named in full; the rest are counted. */
const PROBLEMS_KEPT = 10;

/**
 * Checks a batch file (JSONL) as its bytes pass, a line at a time: each line
 * not blank a JSON object with a unique `custom_id`, `method` POST, a `url`
 * of `BATCH_URLS` and a `body` object nesting no deeper than `maxDepth`, the
 * bound the `/v1` routes hold a body to (TOLLGATE_MAX_JSON_DEPTH): a line the
 * route would refuse for its depth is refused here, before a batch is made of
 * it, and no later step that copies or serializes it recursively overflows the
 * stack on it. Holds one line (at most `maxLineBytes`; past it the line is a
 * problem and the rest of it is skipped unread) and a short key per
 * `custom_id` seen, never the file.
 *
 * @example
 * const check = new BatchLineCheck(4 * 1024 * 1024, 64);
 * for await (const chunk of file) check.push(chunk);
 * check.end();
 * if (check.problems.length > 0) …
 */
export class BatchLineCheck {
  /** The lines that are requests (not blank). */
  requests = 0;
  /** The first problems, in line order. */
  readonly problems: LineProblem[] = [];
  /** Every problem, counted. */
  problemCount = 0;
  private lineNumber = 1;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private skipping = false;
  private readonly customIds = new Map<string, number>();

  constructor(
    private readonly maxLineBytes: number,
    private readonly maxDepth: number,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (let newline = chunk.indexOf(10, start); newline >= 0; newline = chunk.indexOf(10, start)) {
      this.take(chunk.subarray(start, newline));
      this.endLine();
      start = newline + 1;
    }
    if (start < chunk.length) this.take(chunk.subarray(start));
  }

  /** The file's end: its last line, if it has no line break after it. */
  end(): void {
    if (this.pendingBytes > 0 || this.skipping) this.endLine();
    if (this.requests === 0 && this.problemCount === 0) this.problem(1, 'the file holds no request');
  }

  private take(bytes: Buffer): void {
    if (this.skipping || bytes.length === 0) return;
    if (this.pendingBytes + bytes.length > this.maxLineBytes) {
      this.skipping = true;
      this.pending = [];
      this.pendingBytes = 0;
      return;
    }
    this.pending.push(bytes);
    this.pendingBytes += bytes.length;
  }

  private endLine(): void {
    const line = this.lineNumber++;
    if (this.skipping) {
      this.skipping = false;
      this.requests++;
      this.problem(line, `is longer than ${this.maxLineBytes} bytes, the most one request may be`);
      return;
    }
    const text = Buffer.concat(this.pending, this.pendingBytes).toString('utf8');
    this.pending = [];
    this.pendingBytes = 0;
    if (text.trim() === '') return;
    this.requests++;
    const message = this.lineProblem(text, line);
    if (message) this.problem(line, message);
  }

  private lineProblem(text: string, line: number): string | null {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return 'is not valid JSON';
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'is not a JSON object';
    const request = value as Record<string, unknown>;
    const id = request.custom_id;
    if (typeof id !== 'string' || id.length === 0 || id.length > MAX_CUSTOM_ID_CHARS)
      return `custom_id must be a string of 1 to ${MAX_CUSTOM_ID_CHARS} characters`;
    // Kept in a PostgreSQL text column, which cannot hold it: the batch could never be read.
    if (id.includes('\u0000')) return 'custom_id must not contain the NUL character (\\u0000)';
    // Short ids are kept as they are, long ones as their hash: what is held per line stays small.
    const key = id.length <= 40 ? `=${id}` : `#${createHash('sha256').update(id).digest('base64')}`;
    const earlier = this.customIds.get(key);
    if (earlier !== undefined) return `custom_id ${JSON.stringify(id)} is already on line ${earlier}`;
    this.customIds.set(key, line);
    if (request.method !== 'POST') return 'method must be "POST"';
    if (typeof request.url !== 'string' || !(BATCH_URLS as readonly string[]).includes(request.url))
      return `url must be one of ${BATCH_URLS.join(', ')}`;
    const body = request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'body must be a JSON object';
    return depthProblem(body, this.maxDepth);
  }

  private problem(line: number, message: string): void {
    this.problemCount++;
    if (this.problems.length < PROBLEMS_KEPT) this.problems.push({ line, message });
  }
}

/** The route's own depth check on a line's body (`checkJsonShape`, without recursion), as a problem. */
function depthProblem(body: unknown, maxDepth: number): string | null {
  try {
    checkJsonShape(body, { storable: false, maxDepth });
    return null;
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    return `body nests deeper than ${maxDepth} levels, the most a request may (TOLLGATE_MAX_JSON_DEPTH)`;
  }
}
