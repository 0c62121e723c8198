import type { IncomingMessage } from 'node:http';

/**
 * A body of a declared length, read from Node's request as its chunks arrive: one chunk (a small
 * body) is the body itself, more are joined once. `c.req.arrayBuffer()` (@hono/node-server) joins
 * them, then copies the whole body again into an ArrayBuffer: a copy of every body, and for an
 * agent's 200 KB a fresh allocation of its size (docs/benchmark-history.md, twentieth round).
 * Rejects, as that does, when the client leaves before the end.
 */
export function readDeclared(incoming: IncomingMessage, length: number): Promise<Buffer> {
  if (incoming.readableDidRead) return Promise.reject(new TypeError('The request body was already read.'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
    };
    const onEnd = () => {
      stop();
      // The HTTP parser holds a body to its declared length; fewer bytes means the client left
      // mid-body.
      if (received !== length) reject(new Error('Client connection prematurely closed.'));
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
    };
    const onError = (error: Error) => {
      stop();
      reject(error);
    };
    const onClose = () => {
      stop();
      reject(new Error('Client connection prematurely closed.'));
    };
    const stop = () => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('close', onClose);
    };
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('close', onClose);
  });
}
