/**
 * Micro-benchmark of an embeddings answer's own JavaScript in the gateway
 * (docs/benchmark-history.md, tenth round): the engine's answer of 4 vectors of 1,024 floats (spelt
 * as the simulator and vLLM spell float32 values), in the 64 KB pieces Node's HTTP client hands
 * over, read, its vectors lifted and checked against JSON's number grammar, the envelope parsed,
 * renamed, ordered and written, and the vectors put back: the bytes `c.body` is given. It prints µs
 * an answer, so what a change saves shows without the full bench's run-to-run spread. No sockets,
 * no Redis, no journal; a lower bound, as bench/sse-relay.ts says of itself (`npm run bench` is the
 * judge).
 *
 *   npx tsx bench/embeddings-answer.ts
 */
import { withoutNullFields } from '../src/gateway/proxy/openai-shape.js';
import { readEngineAnswer } from '../src/gateway/proxy/engine-answer.js';
import type { EngineResponse } from '../src/gateway/proxy/upstream.js';
import { embed } from '../src/sim/embeddings.js';
import { EMBEDDINGS } from '../src/gateway/requests/embeddings.js';

const INPUTS = 4;
const DIMENSIONS = 1024;
const ANSWERS = 3_000;
const ROUNDS = 5;

const engineAnswer = Buffer.from(
  JSON.stringify({
    id: 'embd-1',
    object: 'list',
    created: 1732500000,
    model: 'sim-embed',
    data: Array.from({ length: INPUTS }, (_, index) => ({
      index,
      object: 'embedding',
      embedding: Array.from(embed(`input ${index}`, DIMENSIONS)),
    })),
    usage: { prompt_tokens: 12, total_tokens: 12, completion_tokens: 0, prompt_tokens_details: null },
  }),
);
/** The answer as Node's HTTP client reads it: pieces of at most 64 KB, each a buffer of its own. */
const pieces: Buffer[] = [];
for (let at = 0; at < engineAnswer.length; at += 65_536)
  pieces.push(Buffer.from(engineAnswer.subarray(at, at + 65_536)));

const response: EngineResponse = {
  status: 200,
  body: (async function* () {})(),
  bytes: async () => Buffer.concat(pieces),
};

/** What `serveBilled` does with a JSON answer before `c.body`; returns the bytes written. */
async function answerOnce(): Promise<number> {
  const { answer, restore } = await readEngineAnswer(response, EMBEDDINGS.liftArrays);
  answer.model = 'client-model';
  EMBEDDINGS.shapeAnswer?.(answer);
  const written = restore(JSON.stringify(withoutNullFields(answer)));
  // A string is measured and encoded again on its way to the socket; bytes go as they are.
  return typeof written === 'string' ? Buffer.byteLength(Buffer.from(written)) : written.length;
}

const written = await answerOnce();
if (
  written !==
  engineAnswer.length + 'client-model'.length - 'sim-embed'.length - ',"prompt_tokens_details":null'.length
) {
  throw new Error(
    `the answer written is ${written} bytes, not the engine's less its null field and with the client's model name`,
  );
}
console.log(
  `embeddings answer: ${INPUTS} × ${DIMENSIONS} floats, ${engineAnswer.length} bytes from the engine, ${written} written`,
);
for (let round = 0; round < ROUNDS; round++) {
  const started = process.hrtime.bigint();
  for (let i = 0; i < ANSWERS; i++) await answerOnce();
  console.log(
    `round ${round + 1}: ${(Number(process.hrtime.bigint() - started) / ANSWERS / 1_000).toFixed(1)} µs an answer`,
  );
}
