import http from 'node:http';
import { performance } from 'node:perf_hooks';

export interface Target {
  /** Full URL of the endpoint, e.g. http://127.0.0.1:8080/v1/chat/completions. */
  url: string;
  headers: Record<string, string>;
}

export interface Sample {
  latencyMs: number;
  /** Streams only: until the first event carrying non-empty `delta.content`. */
  ttftMs?: number;
  /** 0 when the request failed without an HTTP answer. */
  status: number;
  ok: boolean;
}

export interface Slice {
  samples: Sample[];
  elapsedMs: number;
}

/**
 * A keep-alive pool sized to the concurrency, so every worker keeps its own
 * warm connection and no request waits for a socket.
 *
 * @example
 * const agent = createAgent(32);
 */
export function createAgent(concurrency: number): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
}

/**
 * Closed-loop load: `concurrency` workers each send the next request as soon as
 * the previous one ends, until `durationMs` has passed. Requests started before
 * the deadline finish and count; throughput is over the real elapsed time.
 *
 * @example
 * const slice = await runSlice(target, agent, { body, stream: false, concurrency: 1, durationMs: 3000 });
 */
export async function runSlice(
  target: Target,
  agent: http.Agent,
  options: { body: string | string[]; stream: boolean; concurrency: number; durationMs: number },
): Promise<Slice> {
  // Several bodies are sent in rotation, one a request, by all workers together.
  const payloads = (Array.isArray(options.body) ? options.body : [options.body]).map((body) => {
    const payload = Buffer.from(body);
    return {
      payload,
      headers: { ...target.headers, 'content-type': 'application/json', 'content-length': String(payload.length) },
    };
  });
  let sentCount = 0;
  const samples: Sample[] = [];
  const start = performance.now();
  const deadline = start + options.durationMs;
  const worker = async () => {
    while (performance.now() < deadline) {
      const { payload, headers } = payloads[sentCount++ % payloads.length]!;
      samples.push(await send(target.url, agent, headers, payload, options.stream));
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return { samples, elapsedMs: performance.now() - start };
}

function send(
  url: string,
  agent: http.Agent,
  headers: Record<string, string>,
  payload: Buffer,
  stream: boolean,
): Promise<Sample> {
  return new Promise((resolve) => {
    const start = performance.now();
    const fail = (status: number) => resolve({ latencyMs: performance.now() - start, status, ok: false });
    const request = http.request(url, { method: 'POST', agent, headers }, (response) => {
      const status = response.statusCode ?? 0;
      const success = status >= 200 && status < 300;
      const watcher = stream && success ? firstContentWatcher() : null;
      let ttftMs: number | undefined;
      response.on('data', (chunk: Buffer) => {
        if (watcher && ttftMs === undefined && watcher(chunk)) ttftMs = performance.now() - start;
      });
      response.on('end', () => {
        // A 200 stream that never carried content (an error event instead) is a failure too.
        const ok = success && (!stream || ttftMs !== undefined);
        resolve({ latencyMs: performance.now() - start, ttftMs, status, ok });
      });
      response.on('error', () => fail(status));
      // A connection cut mid-body may end without 'end'; the first resolve wins.
      response.on('close', () => {
        if (!response.complete) fail(status);
      });
    });
    request.on('error', () => fail(0));
    request.end(payload);
  });
}

/**
 * Feeds SSE bytes; answers true once a `data:` event has non-empty delta content (chat), delta text
 * (Messages) or a text delta (Responses).
 */
function firstContentWatcher(): (chunk: Buffer) => boolean {
  let pending = '';
  return (chunk) => {
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.startsWith('data:')) continue;
      const data = line.slice(5).trim();
      if (data === '[DONE]') continue;
      try {
        // Chat's delta.content, a Messages content_block_delta's delta.text, or a Responses
        // output_text.delta's delta.
        const event = JSON.parse(data) as {
          choices?: { delta?: { content?: unknown } }[];
          delta?: { text?: unknown } | string;
        };
        const content =
          event.choices?.[0]?.delta?.content ?? (typeof event.delta === 'string' ? event.delta : event.delta?.text);
        if (typeof content === 'string' && content.length > 0) return true;
      } catch {
        // a malformed event is not content
      }
    }
    return false;
  };
}
