import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

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
 * The factor while a long download is written (1.3): an export's pages outlive the young
 * generation while the client reads them, so they die in the old one, and at a factor of 4 they
 * piled up to about 130 MiB before V8 collected them (docs/benchmark.md, "A year of history").
 */
export const STREAMING_HEAP_GROWING_PERCENT = 30;

const flagGiven = (execArgv: readonly string[]) =>
  execArgv.some((arg) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg));

/**
 * Fixes V8's heap growing factor (`--heap-growing-percent`) for this process,
 * unless node was started with a value of its own. V8 reads it at each full
 * collection, so setting it at start-up is the same as passing it to node.
 *
 * @example
 * setHeapGrowth(); // first thing in src/main.ts
 */
export function setHeapGrowth(execArgv: readonly string[] = process.execArgv): boolean {
  if (flagGiven(execArgv)) return false;
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}

/**
 * The process's heap growth while long downloads (ledger exports, a full `wallet verify`) are
 * written: the first one lowers the factor to `STREAMING_HEAP_GROWING_PERCENT` and collects the
 * heap once, so the download's garbage is collected near the live heap instead of filling four
 * times it; the last one to end puts the factor back. Agents' requests served meanwhile pay more
 * full collections (about 1 ms of CPU a request, at most for the download's length). Does nothing
 * when node was given a factor of its own (an operator's choice), or in a process that never set
 * one (tests start gateways in their own process).
 *
 * @example
 * return c.body(heap.whileStreaming(ledgerCsv(exported)), 200, headers);
 */
export class HeapGrowth {
  private streams = 0;
  private collect: (() => void) | null = null;

  /** `managed`: what `setHeapGrowth` answered (false: node was given a factor, or never set one). */
  constructor(private readonly managed: boolean) {}

  /** How many long downloads are being written now. */
  get streaming(): number {
    return this.streams;
  }

  /** `body`, passed through unchanged, with the factor lowered from its first pull to its end. */
  whileStreaming(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    if (!this.managed) return body;
    const reader = body.getReader();
    let held = false;
    const release = () => {
      if (!held) return;
      held = false;
      this.end();
    };
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          if (!held) {
            held = true;
            this.begin();
          }
          try {
            const next = await reader.read();
            if (next.done) {
              release();
              controller.close();
            } else controller.enqueue(next.value);
          } catch (error) {
            release();
            controller.error(error);
          }
        },
        cancel: async (reason) => {
          release();
          await reader.cancel(reason);
        },
        // Pulled only when read: a body never read holds nothing.
      },
      { highWaterMark: 0 },
    );
  }

  private begin(): void {
    this.streams += 1;
    if (this.streams > 1) return;
    v8.setFlagsFromString(`--heap-growing-percent=${STREAMING_HEAP_GROWING_PERCENT}`);
    // The limit stays where the last collection at a factor of 4 put it until the next one: one
    // now (tens of milliseconds, once a download) sets it from the lower factor at once.
    this.gc()();
  }

  private end(): void {
    this.streams -= 1;
    if (this.streams === 0) v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  }

  /** V8's `gc()`, exposed for this process once (node's `--expose-gc` at run time). */
  private gc(): () => void {
    if (!this.collect) {
      v8.setFlagsFromString('--expose-gc');
      this.collect = runInNewContext('gc') as () => void;
    }
    return this.collect;
  }
}
