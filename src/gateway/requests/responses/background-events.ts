import type { Context } from 'hono';
import { streamedUsage } from '../../billing/settlement.js';
import { FINISHED_STATUSES } from '../../stored-responses/background-types.js';
import type { BackgroundStore } from '../../stored-responses/background-store.js';
import type { GatewayEnv } from '../../../shared/http/context.js';
import { describeError, type Logger } from '../../../shared/http/log.js';
import { SSE_HEADERS } from '../cached-answer.js';
import type { StreamWriter } from '../stream-writer.js';

// A background response's events: kept as its run writes them (`EventKeeper`), and read again
// from the store by any replica (`streamFromStore`).

/** How often a reader looks for a running job's next events. */
const POLL_MS = 100;
/** How often a running job's events and its count of tokens used are written to the store. */
const FLUSH_MS = 250;

/**
 * A background response's events after `after` (a `sequence_number`; -1 for all), as SSE, read from
 * the store: the job may run on any replica. Written as they are kept, until the job has ended and
 * every kept event is sent (the Responses stream has no `[DONE]`); a reader that leaves stops
 * reading, the job runs on.
 *
 * @example
 * return streamFromStore(c, store, { orgId, id: 'resp_…' }, 41); // from sequence_number 42 on
 */
export function streamFromStore(
  c: Context<GatewayEnv>,
  store: BackgroundStore,
  job: { orgId: string; id: string },
  after: number,
): Response {
  const { orgId, id } = job;
  const encoder = new TextEncoder();
  let last = after;
  let closed = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        if (closed) return;
        // The status before the events: a job seen ended has kept every event by then.
        const row = await store.get(orgId, id);
        const events = await store.eventsAfter(id, last);
        if (events.length > 0) {
          last = events[events.length - 1]!.sequence;
          controller.enqueue(encoder.encode(events.map((kept) => kept.event).join('')));
          return;
        }
        if (!row || FINISHED_STATUSES.has(row.status)) {
          controller.close();
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    },
    cancel() {
      closed = true;
    },
  });
  return c.body(stream, 200, SSE_HEADERS);
}

/**
 * Reads a job's events as the relay writes them: each kept with its `sequence_number` when its
 * client asked for a stream (written every FLUSH_MS), and the tokens used so far written beside
 * them, for a replica that bills the job should this one die.
 */
export class EventKeeper {
  private pending: Array<[number, string]> = [];
  private writing: Promise<void> = Promise.resolve();
  private lastFlush = 0;

  constructor(
    private readonly ctx: { store: BackgroundStore; replica: string; log: Logger },
    private readonly job: { id: string; streamed: boolean },
    private readonly writer: Pick<StreamWriter, 'state'>,
  ) {}

  async read(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      text += decoder.decode(value, { stream: true });
      let boundary: number;
      while ((boundary = text.indexOf('\n\n')) !== -1) {
        const event = text.slice(0, boundary + 2);
        text = text.slice(boundary + 2);
        const sequence = /"sequence_number":(\d+)/.exec(event);
        if (sequence && this.job.streamed) this.pending.push([Number(sequence[1]), event]);
      }
      if (performance.now() - this.lastFlush >= FLUSH_MS) void this.flush();
    }
  }

  /** Writes what is pending; one write at a time, in order. */
  flush(): Promise<void> {
    this.lastFlush = performance.now();
    const events = this.pending;
    this.pending = [];
    // The engine's running count when it reports one (as the stream's checkpoints bill it), else
    // the chunks that carried tokens.
    const counted = streamedUsage(this.writer.state);
    const used = {
      promptTokens: counted?.promptTokens ?? null,
      tokens: counted?.completionTokens ?? this.writer.state.tokenChunks,
      cachedTokens: counted?.cachedTokens ?? 0,
      reasoningTokens: counted?.reasoningTokens ?? 0,
    };
    const { store, replica, log } = this.ctx;
    this.writing = this.writing.then(async () => {
      try {
        if (events.length > 0) await store.appendEvents(this.job.id, events);
        await store.generated(this.job.id, replica, used);
      } catch (error) {
        log.warn('a background response could not keep its events', { id: this.job.id, ...describeError(error) });
      }
    });
    return this.writing;
  }
}
