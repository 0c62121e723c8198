import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort, repoRoot, startChild, type TestChild, waitForHealth } from './processes.js';
import { requireServices } from './services.js';

// llama.cpp's own server as a test engine: built by scripts/llama-server.sh (.ci/run runs it before
// the tests) into a cache folder, with a tiny random-weight model. Its text is noise; its protocol
// is real.

const script = path.join(repoRoot, 'scripts/llama-server.sh');

/** The cache folder the script builds into (the same rule as the script's). */
export function llamaServerCache(): string {
  const version = /^version=(\S+)$/m.exec(readFileSync(script, 'utf8'))![1]!;
  const base = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache');
  return process.env.LLAMA_SERVER_CACHE ?? path.join(base, 'tollgate', `llama-server-${version}`);
}

export const llamaServerBinary = () => path.join(llamaServerCache(), 'bin/llama-server');
/** The model, named (as the script names it) for the script that writes it. */
export const llamaTinyModel = () => {
  const digest = createHash('sha256')
    .update(readFileSync(path.join(repoRoot, 'scripts/llama-tiny-model.py')))
    .digest('hex');
  return path.join(llamaServerCache(), `models/tiny-${digest.slice(0, 12)}.gguf`);
};

/**
 * Why llama-server cannot run here, or null when it can. Not built is an error under
 * REQUIRE_SERVICES=1 (CI builds it before the tests); tests never build it themselves (minutes of
 * compiling).
 */
export function llamaServerMissing(): string | null {
  if (existsSync(llamaServerBinary()) && existsSync(llamaTinyModel())) return null;
  const compiler = spawnSync('g++', ['--version'], { stdio: 'ignore' });
  const why = compiler.error
    ? 'no C++ compiler (g++) to build llama-server'
    : `llama-server is not built in ${llamaServerCache()}`;
  if (requireServices) throw new Error(`REQUIRE_SERVICES=1 but ${why}`);
  return `${why}: run scripts/llama-server.sh (about 10 minutes on 2 cores, once per version)`;
}

export interface LlamaServer {
  url: string;
  child: TestChild;
}

/**
 * Starts llama-server on the tiny model on a free loopback port, one thread, with `--metrics`, plus
 * `args`.
 */
export async function startLlamaServer(name: string, args: string[] = []): Promise<LlamaServer> {
  const port = await freePort();
  const child = startChild(
    name,
    llamaServerBinary(),
    ['-m', llamaTinyModel(), '--host', '127.0.0.1', '--port', String(port), '-t', '1', '-c', '4096', '--metrics']
      .concat(['--no-warmup'])
      .concat(args),
    { cwd: repoRoot, env: process.env },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(child, `${url}/health`, 60_000);
  return { url, child };
}

/** One POST the engine answered, as it answered it. */
export interface Exchange {
  path: string;
  status: number;
  request: string;
  response: string;
}

/**
 * An HTTP proxy on a free loopback port in front of an engine, recording each
 * POST and the engine's answer: what the engine reported, read at the engine.
 */
export async function recordingProxy(target: string): Promise<{ url: string; exchanges: Exchange[]; close(): void }> {
  const exchanges: Exchange[] = [];
  const { hostname, port } = new URL(target);
  const server = http.createServer((req, res) => {
    const requestChunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => requestChunks.push(chunk));
    req.on('end', () => {
      const upstream = http.request(
        { hostname, port, path: req.url, method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          const responseChunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => {
            responseChunks.push(chunk);
            res.write(chunk);
          });
          // Recorded once, when the answer ends or when it is cut: the gateway may close its
          // connection as soon as it has read a stream's last event, and then the answer closes
          // without an 'end'.
          let recorded = false;
          const record = () => {
            if (recorded || req.method !== 'POST') return;
            recorded = true;
            exchanges.push({
              path: req.url ?? '',
              status: answer.statusCode ?? 0,
              request: Buffer.concat(requestChunks).toString('utf8'),
              response: Buffer.concat(responseChunks).toString('utf8'),
            });
          };
          answer.on('end', () => {
            record();
            res.end();
          });
          answer.on('close', record);
        },
      );
      upstream.on('error', () => res.destroy());
      // The client left: so does the call to the engine (it stops generating).
      res.on('close', () => upstream.destroy());
      upstream.end(Buffer.concat(requestChunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    exchanges,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * An engine's usage object: the counts, and the cached part of the prompt where the engine reports
 * it.
 */
export interface ReportedUsage {
  prompt_tokens: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

/**
 * The usage an engine reported in a recorded answer: a JSON body's, or a stream's last chunk with
 * one.
 */
export function reportedUsage(exchange: Exchange): ReportedUsage | null {
  const texts = exchange.response.trimStart().startsWith('{')
    ? [exchange.response]
    : exchange.response
        .split('\n')
        .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
        .map((line) => line.slice(6));
  let usage = null;
  for (const text of texts) {
    const parsed = JSON.parse(text) as { usage?: ReportedUsage };
    if (parsed.usage) usage = parsed.usage;
  }
  return usage;
}
