import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import type { BodyDrain } from '../../config/index.js';

/**
 * Reads and throws away what the client is still sending, up to
 * `drain.bytes` and for at most `drain.ms`, before a refusal (a 413) is answered and
 * the connection closed. Real clients (Node's fetch and the SDKs over it,
 * curl) write the whole body before they read an answer: a socket closed
 * while they are still writing is an EPIPE or a reset for them, never the
 * 413 and its sentence.
 */
export async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>, drain: BodyDrain): Promise<void> {
  // Cancelling ends a read that waits on a client who stopped sending.
  const deadline = setTimeout(() => void reader.cancel().catch(() => undefined), drain.ms);
  try {
    for (let discarded = 0; discarded <= drain.bytes;) {
      const { done, value } = await reader.read();
      if (done) return;
      discarded += value.byteLength;
    }
  } catch {
    // The client went away: there is no one left to answer.
  } finally {
    clearTimeout(deadline);
  }
}

/**
 * Reads and throws away a body the route refuses without reading (an upload
 * refused for its slot: 429, 503), within `drain`, so that the client, still
 * writing it, reads the answer. A body declared longer than `drain.bytes`
 * would be cut anyway: it is answered at once. Answer with `Connection:
 * close`: the drain may have stopped short of the body's end.
 *
 * @example
 * await discardBody(c, config.oversizeDrain);
 */
export async function discardBody(c: Context, drain: BodyDrain): Promise<void> {
  const length = c.req.header('content-length');
  if (length !== undefined && Number(length) > drain.bytes) return;
  // Straight from Node's request when the body was not touched yet: no web stream is made only to
  // be thrown away.
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (incoming) return discardIncoming(incoming, drain);
  const body = c.req.raw.body;
  if (body) await discardRest(body.getReader(), drain);
}

/**
 * `discardRest` for Node's request: reads it in flowing mode, counting, until its end or the
 * drain's bounds.
 */
function discardIncoming(incoming: IncomingMessage, drain: BodyDrain): Promise<void> {
  if (incoming.readableEnded || incoming.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let discarded = 0;
    const done = () => {
      clearTimeout(deadline);
      incoming.off('data', onData).off('end', done).off('error', done).off('close', done);
      incoming.pause();
      resolve();
    };
    const onData = (chunk: Buffer) => {
      discarded += chunk.byteLength;
      if (discarded > drain.bytes) done();
    };
    const deadline = setTimeout(done, drain.ms);
    incoming.on('data', onData).once('end', done).once('error', done).once('close', done);
    incoming.resume();
  });
}
