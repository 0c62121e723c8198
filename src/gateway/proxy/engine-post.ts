import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { CallAbort } from './call-abort.js';
import type { WrittenJson } from './client-body.js';
import type { EngineAgents } from './engine-agents.js';

/**
 * One POST to an engine on the process's keep-alive connections (`engine-agents.ts`), resolved
 * with its answer once its headers are in; what the answer means is `upstream.ts`'s to say.
 */
export function post(
  url: string,
  body: string | WrittenJson,
  headers: Record<string, string>,
  abort: CallAbort,
  agents: EngineAgents,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const target = agents.parsed(url);
    const client = target.https ? https : http;
    // The URL's parts named, not `{ ...target.options, method, … }`: V8 (Node 20) takes a slow
    // path, about 2 µs, for a spread followed by properties its source lacks, and Object.assign
    // from URL options was not much faster (CONTRIBUTING, "Measured on the request path").
    const { protocol, hostname, port, path, auth } = target.options;
    let answered = false;
    const send = (agent: http.Agent | false) => {
      const request = client.request(
        {
          protocol,
          hostname,
          port,
          path,
          auth,
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': typeof body === 'string' ? Buffer.byteLength(body) : body.length,
            accept: 'application/json, text/event-stream',
            ...headers,
          },
        },
        (response) => {
          answered = true;
          resolve(response);
        },
      );
      request.on('error', (error: NodeJS.ErrnoException) => {
        // A kept-alive connection the engine had closed (llama.cpp's server, after a stream, though
        // its answer said keep-alive): reset unread. Sent again once, on a connection of its own.
        if (agent && !answered && request.reusedSocket && error.code === 'ECONNRESET' && !abort.aborted) send(false);
        else reject(error);
      });
      // Destroyed, the request fails (before its answer) or ends its answer's body with the error
      // (after); once its answer has ended Node has marked it destroyed, so a late abort leaves its
      // connection (another call's by then).
      abort.onAbort((error) => request.destroy(error));
      if (typeof body === 'string') request.end(body);
      else {
        // Written before the socket is attached, the parts go out together in one `writev`.
        for (const part of body.parts) request.write(part);
        request.end();
      }
    };
    send(target.https ? agents.https : agents.http);
  });
}

/** An answer's body, at most `maxBytes` of it (the rest is not read). */
export async function readBytes(response: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= maxBytes) {
      response.destroy();
      break;
    }
  }
  return Buffer.concat(chunks);
}
