import v8 from 'node:v8';

/**
 * How far V8 lets the old generation grow past what the last full collection
 * kept, in percent: 300 is a factor of 4, the most V8 itself picks for a heap
 * of this size (`MemoryController::MaxGrowingFactor`).
 *
 * Left to itself, V8 picks the factor from how fast its collector marks
 * against how fast the program fills the old generation. Under agents'
 * requests (bodies of 100 to 300 KB, parsed into strings that die young) it
 * picked 1.1 to 1.3, most of all after an idle spell, when its memory reducer
 * had shrunk the heap: the limit then sat within the young generation's size
 * of the live heap, so incremental marking started again as soon as a full
 * collection ended, one every 200 ms at one connection. Measured with the
 * bench's chat-json-200k at one connection (docs/benchmark.md, "What agents
 * send"): 2.6 to 3.4 ms of CPU a request with 60 to 94 full collections a
 * run, and 1.4 to 1.5 ms with 2 at this factor, for a heap of at most about
 * four times the live one (the gateway's is about 40 MB).
 */
export const HEAP_GROWING_PERCENT = 300;

/**
 * Fixes V8's heap growing factor (`--heap-growing-percent`) for this process,
 * unless node was started with a value of its own. V8 reads it at each full
 * collection, so setting it at start-up is the same as passing it to node.
 *
 * @example
 * setHeapGrowth(); // first thing in src/main.ts
 */
export function setHeapGrowth(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((arg) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg))) return false;
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
