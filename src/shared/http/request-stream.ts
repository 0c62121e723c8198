import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import type { BodyDrain } from '../../config/index.js';

/**
 * The request's body as it arrives, one chunk per read. Served by
 * @hono/node-server, straight from Node's request, whose reads wait for the
 * reader (a web stream made of it may read ahead of a slow consumer); under
 * `app.request` (tests), the web body.
 *
 * @example
 * const chunks = bodyChunks(c);
 */
export function bodyChunks(c: Context): AsyncIterator<Uint8Array, unknown> {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (incoming) return incoming[Symbol.asyncIterator]() as AsyncIterator<Uint8Array, unknown>;
  const body = c.req.raw.body;
  if (!body) return (async function* () {})();
  const reader = body.getReader();
  return {
    next: async (): Promise<IteratorResult<Uint8Array, unknown>> => {
      const read = await reader.read();
      return read.done ? { done: true, value: undefined } : { done: false, value: read.value as Uint8Array };
    },
    return: async () => {
      await reader.cancel().catch(() => undefined);
      return { done: true, value: undefined };
    },
  };
}

/**
 * Reads and drops what the client still sends of `chunks`, within `drain`, before a refusal is
 * answered: a client still writing its body reads the answer rather than a reset. Past the drain,
 * the body is closed.
 */
export async function discardChunks(chunks: AsyncIterator<Uint8Array, unknown>, drain: BodyDrain): Promise<void> {
  let timedOut = false;
  const deadline = setTimeout(() => {
    timedOut = true;
    void chunks.return?.();
  }, drain.ms);
  try {
    for (let discarded = 0; discarded <= drain.bytes && !timedOut;) {
      const next = await chunks.next();
      if (next.done) return;
      discarded += next.value.byteLength;
    }
    await chunks.return?.();
  } catch {
    // The client went away: there is no one left to answer.
  } finally {
    clearTimeout(deadline);
  }
}
