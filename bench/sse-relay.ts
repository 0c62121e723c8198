/**
 * Micro-benchmark of a chat stream's own JavaScript in the gateway (docs/benchmark-history.md,
 * eighth round): one stream of 64 token chunks as vLLM writes them (running usage on each, a first
 * chunk with the role, a final usage chunk and `[DONE]`), pushed as Node's HTTP client pushes an
 * engine's response (one push an event, over three turns of the event loop), through `relaySse` and
 * the chat rewriter, and read as @hono/node-server reads a body. It prints µs a stream for the
 * whole relay, for the relay with events forwarded unchanged, and for the rewriter alone, so what a
 * change to either saves shows without the full bench's run-to-run spread. No sockets, no Redis, no
 * journal: only this code. Its figures are a lower bound: under load, with cold caches and the
 * collector busy, the same code costs more (`npm run bench` is the judge; a change that won here
 * lost there, docs/benchmark.md).
 *
 *   npx tsx bench/sse-relay.ts
 */
import { PassThrough, type Readable } from 'node:stream';
import { createChatChunkRewriter } from '../src/gateway/requests/chat-stream.js';
import { relaySse } from '../src/gateway/proxy/sse.js';

const TOKENS = 64;
const STREAMS = 20_000;
const ROUNDS = 5;

const head = '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732500000,"model":"sim-model",';
const usage = (completion: number) =>
  `"usage":{"prompt_tokens":12,"total_tokens":${12 + completion},"completion_tokens":${completion}}`;
const chunks = [
  `${head}"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],${usage(0)}}`,
  ...Array.from(
    { length: TOKENS },
    (_, i) =>
      `${head}"choices":[{"index":0,"delta":{"content":" tok${i}"},"logprobs":null,"finish_reason":null}],${usage(i + 1)}}`,
  ),
  `${head}"choices":[],${usage(TOKENS)}}`,
];
/** The engine's events, each one HTTP chunk of its response. */
const events = [...chunks.map((data) => Buffer.from(`data: ${data}\n\n`)), Buffer.from('data: [DONE]\n\n')];
const bodyBytes = events.reduce((sum, event) => sum + event.length, 0);

/**
 * The engine's response as Node's HTTP client gives it: one push for each event (each is an HTTP
 * chunk), over three turns of the event loop, as the bench's gateway sees a stream of 64 chunks
 * from a zero-latency engine.
 */
function engineResponse(): Readable {
  const response = new PassThrough();
  let sent = 0;
  const sendSome = () => {
    const upTo = Math.min(events.length, sent + Math.ceil(events.length / 3));
    for (; sent < upTo; sent++) response.write(events[sent]);
    if (sent < events.length) setImmediate(sendSome);
    else response.end();
  };
  setImmediate(sendSome);
  return response;
}

const newRewriter = () => createChatChunkRewriter({ clientModel: 'qwen', includeUsage: false, continuousUsage: false });

/** Relays one stream and reads it to the end; returns the bytes the client got. */
async function relayOnce(rewrite: boolean): Promise<number> {
  const rewriter = newRewriter();
  const relayed = relaySse({
    upstream: engineResponse(),
    onData: rewrite ? rewriter.rewrite : (data) => data,
    onEnd: async () => {},
    abortUpstream() {},
  });
  const reader = relayed.getReader();
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return bytes;
    bytes += value.byteLength;
  }
}

async function microsecondsPerStream(fn: () => unknown): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < STREAMS; i++) await fn();
  return Number(process.hrtime.bigint() - start) / STREAMS / 1000;
}

const candidates: Record<string, () => unknown> = {
  'relay + rewrite': () => relayOnce(true),
  'relay, events unchanged': () => relayOnce(false),
  'rewrite alone': () => {
    const { rewrite } = newRewriter();
    for (const data of chunks) rewrite(data);
  },
};

console.log(
  `one stream: ${TOKENS} token chunks, ${bodyBytes} bytes in ${events.length} pushes over 3 turns; ${STREAMS.toLocaleString('en')} streams a round, ${ROUNDS} rounds (the first warms up)`,
);
for (const [name, fn] of Object.entries(candidates)) {
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) rounds.push(await microsecondsPerStream(fn));
  const settled = rounds.slice(1).sort((a, b) => a - b);
  console.log(
    `${name.padEnd(26)} ${settled[0]!.toFixed(1).padStart(6)} to ${settled.at(-1)!.toFixed(1).padStart(6)} µs a stream`,
  );
}
