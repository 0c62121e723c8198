/**
 * Micro-benchmark behind the SSE relay's choice of codecs (docs/benchmark-history.md,
 * sixth round): encoding one chat chunk's event to bytes, and decoding one
 * engine read to text, with the web API and with Node's own.
 *
 *   npx tsx bench/sse-codecs.ts
 */
import { StringDecoder } from 'node:string_decoder';

const event =
  'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"tok"},"finish_reason":null}]}\n\n';
const iterations = 2_000_000;

/** Nanoseconds per call of `fn`, after a warm-up. */
function nanosecondsPerCall(fn: () => unknown): number {
  for (let i = 0; i < 100_000; i++) fn();
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) fn();
  return Number(process.hrtime.bigint() - start) / iterations;
}

const encoder = new TextEncoder();
const bytes = Buffer.from(event);
const textDecoder = new TextDecoder();
const stringDecoder = new StringDecoder('utf8');

const candidates: Record<string, () => unknown> = {
  'encode: TextEncoder.encode': () => encoder.encode(event),
  'encode: Buffer.from': () => Buffer.from(event),
  'decode: TextDecoder (stream)': () => textDecoder.decode(bytes, { stream: true }),
  'decode: StringDecoder.write': () => stringDecoder.write(bytes),
};
console.log(`${bytes.length}-byte event, ${iterations.toLocaleString('en')} calls each`);
for (const [name, fn] of Object.entries(candidates)) {
  console.log(`${name.padEnd(30)} ${nanosecondsPerCall(fn).toFixed(0).padStart(6)} ns`);
}
