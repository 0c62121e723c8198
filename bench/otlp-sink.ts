import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in OTLP/HTTP collector for `npm run bench -- --tracing`: it reads
 * each export and answers success (an empty ExportTraceServiceResponse), so
 * the gateway pays the full cost of making and sending its spans and nothing
 * waits on a real collector. It counts the bytes it was sent.
 *
 * @example
 * const sink = await startOtlpSink();
 * // OTEL_EXPORTER_OTLP_ENDPOINT=sink.url
 * await sink.close();
 */
export async function startOtlpSink() {
  let exports = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      exports += 1;
      res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stats: () => ({ exports, bytes }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
