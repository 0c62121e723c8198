import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../src/sim/index.js';

/**
 * How the simulator's tests wait for its counters to move (`vi.waitFor`): it runs in this process,
 * so 2 s is plenty.
 */
export const SIM_WAIT = { timeout: 2_000, interval: 10 };

/** The models most suites use. */
export const TEST_MODELS: SimulatorOptions['models'] = [
  { name: 'sim-chat', task: 'chat' },
  { name: 'sim-think', task: 'chat', reasoning: true },
  { name: 'sim-small', task: 'chat', maxModelLen: 64 },
  { name: 'sim-embed', task: 'embedding' },
];

/**
 * Starts a simulator with the test models unless told otherwise.
 *
 * @example
 * const sim = await startTestSim({ itlMs: 5 });
 */
export function startTestSim(options: Partial<SimulatorOptions> = {}): Promise<RunningSimulator> {
  return startSimulator({ models: TEST_MODELS, ...options });
}

/**
 * POSTs a JSON body (or a raw string) and returns the response.
 *
 * @example
 * const res = await post(sim, '/v1/chat/completions', { model: 'sim-chat', messages });
 */
export function post(
  sim: RunningSimulator,
  path: string,
  body: unknown,
  init: { headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<Response> {
  return fetch(`${sim.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...init.headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: init.signal,
  });
}

/** A user message list with one text. */
export function userSays(text: string): Array<{ role: string; content: string }> {
  return [{ role: 'user', content: text }];
}

/** The `data:` payloads of an SSE body, in order ('[DONE]' stays a string). */
export function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .filter((event) => event.length > 0)
    .map((event) => {
      if (!event.startsWith('data: ')) throw new Error(`not an SSE data event: ${JSON.stringify(event)}`);
      return event.slice('data: '.length);
    });
}

/** Parsed SSE chunks before [DONE], and whether [DONE] ended the stream. */
export function sseChunks(text: string): { chunks: any[]; done: boolean } {
  const data = sseData(text);
  const done = data.at(-1) === '[DONE]';
  if (done) data.pop();
  return { chunks: data.map((d) => JSON.parse(d)), done };
}

/**
 * Reads a streaming body until it ends or fails; returns what arrived and the failure, if any.
 *
 * @example
 * const { text, error } = await readAll(res);
 */
export async function readAll(res: Response): Promise<{ text: string; error: unknown }> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, error: null };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error };
  }
}

/**
 * A response's JSON body, loosely typed for assertions.
 *
 * @example
 * const body = await jsonOf(fetch(`${sim.url}/v1/models`));
 */
export async function jsonOf(res: Response | Promise<Response>): Promise<any> {
  return (await res).json();
}
