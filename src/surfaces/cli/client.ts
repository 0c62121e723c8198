import { ApiError, CliError } from './errors.js';

export interface ApiRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /**
   * Under the client's base (`/admin/v1`, or `/v1` for the public API), already encoded (see
   * `segment`).
   */
  path: string;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as `multipart/form-data` instead (a file upload); fetch writes the boundary. */
  form?: FormData;
  /** Answer a 2xx body's bytes as they came (a download) rather than parsed JSON. */
  binary?: boolean;
  /**
   * Ask for NDJSON: each line but the last goes here as it arrives (progress), the last is the
   * answer. The timeout is then the longest wait for a line, not for the whole answer.
   */
  lines?: (line: unknown) => void;
}

export interface ClientOptions {
  url: string;
  /** The operator token, or an API key for the public API. */
  token: string;
  /** Where `path`s start: the management API unless told. */
  base?: '/admin/v1' | '/v1';
  timeoutMs?: number;
}

/**
 * The management API (or the public `/v1` API) over HTTP. Answers the parsed
 * JSON body on 2xx (its bytes, a Buffer, for a `binary` request), null on 204
 * No Content; throws `ApiError` with the
 * envelope's message and code otherwise, and `CliError` with a plain sentence
 * when the gateway cannot be reached.
 *
 * @example
 * const api = createClient({ url: 'http://127.0.0.1:8080', token });
 * const org = await api.send({ method: 'POST', path: '/orgs', body: { name: 'Acme' } });
 */
export function createClient({ url, token, base = '/admin/v1', timeoutMs = 30_000 }: ClientOptions): {
  send(request: ApiRequest): Promise<unknown>;
} {
  return {
    async send({ method, path, body, form, binary, lines }) {
      let response: Response;
      let bytes: Buffer;
      const idle = new IdleTimeout(timeoutMs);
      try {
        response = await fetch(`${url}${base}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            accept: lines ? 'application/x-ndjson, application/json' : 'application/json',
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: form ?? (body === undefined ? undefined : JSON.stringify(body)),
          signal: lines ? idle.signal : AbortSignal.timeout(timeoutMs),
        });
        // Inside the timeout: a body that stops arriving fails like a server that does not answer.
        bytes =
          lines && response.ok ? await readLines(response, lines, idle) : Buffer.from(await response.arrayBuffer());
      } catch (error) {
        throw unreachable(url, error, timeoutMs);
      } finally {
        idle.clear();
      }
      if (response.status === 204) return null;
      if (response.ok && binary) return bytes;
      const text = bytes.toString('utf8');
      // A run's log is plain text.
      if (response.ok && response.headers.get('content-type')?.startsWith('text/plain')) return text;
      const parsed = parseJson(text);
      // A streamed answer that failed part-way ends with the error's envelope, under a 200 sent
      // before it.
      const failedLate = lines !== undefined && (parsed as { error?: unknown } | undefined)?.error !== undefined;
      if (response.ok && parsed !== undefined && !failedLate) return parsed;
      const envelope = (parsed as { error?: { message?: unknown; code?: unknown; details?: unknown } } | undefined)
        ?.error;
      if (typeof envelope?.message === 'string' && typeof envelope.code === 'string') {
        throw new ApiError(
          envelope.message,
          envelope.code,
          response.status,
          Array.isArray(envelope.details) ? envelope.details.filter(isDetail) : [],
        );
      }
      // Not our envelope: something else (a proxy, another server) answered at this address.
      throw new ApiError(
        `the server at ${url} answered HTTP ${response.status} without a Tollgate response`,
        `http_${response.status}`,
        response.status,
      );
    },
  };
}

/** An abort after `ms` without news, pushed back by each `alive()`. */
class IdleTimeout {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout;
  readonly signal = this.controller.signal;
  constructor(private readonly ms: number) {
    this.timer = this.arm();
  }
  private arm() {
    return setTimeout(() => this.controller.abort(new DOMException('no answer', 'TimeoutError')), this.ms);
  }
  alive() {
    clearTimeout(this.timer);
    this.timer = this.arm();
  }
  clear() {
    clearTimeout(this.timer);
  }
}

/**
 * An NDJSON body read as it comes: each whole line but the last handed on, the last answered as the
 * body.
 */
async function readLines(response: Response, onLine: (line: unknown) => void, idle: IdleTimeout): Promise<Buffer> {
  const decoder = new TextDecoder();
  let pending = '';
  let last = '';
  for await (const chunk of response.body ?? []) {
    idle.alive();
    pending += decoder.decode(chunk as Uint8Array, { stream: true });
    let end: number;
    while ((end = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 1);
      if (!line.trim()) continue;
      if (last) onLine(parseJson(last));
      last = line;
    }
  }
  return Buffer.from(`${last}${pending}`, 'utf8');
}

/** Encodes an id for a path; model ids keep their slashes, which the API's routes accept. */
export function segment(id: string): string {
  return id.split('/').map(encodeURIComponent).join('/');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function unreachable(url: string, error: unknown, timeoutMs: number): CliError {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return new CliError(`the gateway at ${url} did not answer within ${timeoutMs / 1000}s`);
  }
  const cause = error instanceof Error ? (error.cause as { code?: string; message?: string } | undefined) : undefined;
  const reason = cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
  return new CliError(
    `cannot reach the gateway at ${url} (${reason}). Is it running? Set --url or TOLLGATE_URL to its address.`,
  );
}

/** One `{ field, message }` of an error's details, as the platform API sends them. */
function isDetail(value: unknown): value is { field: string; message: string } {
  const detail = value as { field?: unknown; message?: unknown } | null;
  return typeof detail?.field === 'string' && typeof detail.message === 'string';
}
