import { createServer, type Server, type ServerResponse } from 'node:http';

/**
 * An engine for tests, on node:http: `/health` answers ok, anything but a POST a 404 (as vLLM
 * answers the `/props` and `/version` the gateway asks an engine of unnamed kind), and each POST's
 * body, read whole as text, goes to `answer`.
 *
 * @example
 * const server = engineStub((body, res) => res.end(JSON.stringify(answerTo(JSON.parse(body)))));
 */
export function engineStub(answer: (body: string, res: ServerResponse) => void): Server {
  return createServer((req, res) => {
    // Decoded once whole: a character split across two chunks would be mangled chunk by chunk.
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (req.url === '/health') return res.end('ok');
      if (req.method !== 'POST') return res.writeHead(404).end();
      answer(text, res);
    });
  });
}
