import type { Context } from 'hono';
import { FINISHED_STATUSES } from '../../stored-responses/background-types.js';
import type { BackgroundStore } from '../../stored-responses/background-store.js';
import type { GatewayEnv } from '../../../shared/http/context.js';
import { SSE_HEADERS } from '../cached-answer.js';

/** How often a reader looks for a running job's next events. */
const POLL_MS = 100;

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
