import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { requireServices } from './services.js';

/** Where Debian's `libfaketime` package puts the library `faketime` preloads. */
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

/**
 * Debian's libfaketime, or null with a line saying it is missing (an error under
 * REQUIRE_SERVICES=1, where `.ci/run` installs it): a replica runs with its clock moved by
 * preloading it, as `faketime -f '+10m' node dist/main.js` does.
 */
export function libfaketime(): string | null {
  if (existsSync(LIBFAKETIME)) return LIBFAKETIME;
  const message = `libfaketime is not installed (${LIBFAKETIME}; apt-get install faketime)`;
  if (requireServices) throw new Error(`REQUIRE_SERVICES=1: ${message}`);
  console.warn(`${message}: the tests of replicas with clocks off are skipped`);
  return null;
}

/** The environment that runs a gateway process with its clock `offset` off (`+10m`, `-10m`). */
export function skewedClock(library: string, offset: string): Record<string, string> {
  return { LD_PRELOAD: library, FAKETIME: offset };
}

/**
 * An HTTP proxy in front of an engine that keeps the body of every POST it passes on: what the
 * engine was sent, each call once, whichever replica sent it. A client that leaves (a killed
 * replica) closes its call to the engine too.
 */
export async function recordingProxy(
  target: string,
): Promise<{ url: string; sent: string[]; close: () => Promise<void> }> {
  const upstream = new URL(target);
  const sent: string[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      if (request.method === 'POST') sent.push(body.toString());
      const call = http.request(
        {
          host: upstream.hostname,
          port: upstream.port,
          path: request.url,
          method: request.method,
          headers: request.headers,
        },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
        },
      );
      call.on('error', () => response.destroy());
      response.on('close', () => call.destroy());
      call.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    sent,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
