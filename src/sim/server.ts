import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { planChat } from './chat.js';
import { runChat } from './chat-answer.js';
import { planCompletion } from './completions.js';
import { runCompletion } from './completions-answer.js';
import { planEmbeddings, runEmbeddings } from './embeddings.js';
import { errorJson, internalError, SimHttpError } from './errors.js';
import { immediateFailure, readFault, streamFault } from './faults.js';
import { parseJsonObject, readBody, sendDetail, sendError, sendJson } from './http.js';
import { modelsJson, SIM_VERSION, tokenizeJson } from './info.js';
import { createState, type SimState } from './state.js';
import type { RunningSimulator, SimulatorOptions } from './types.js';

const STARTING_BODY = errorJson(503, 'ServiceUnavailableError', 'The engine is still loading the model.');
const METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * Starts a vLLM-compatible simulator on node:http.
 *
 * @example
 * const sim = await startSimulator({ models: [{ name: 'sim-chat', task: 'chat' }] });
 * await fetch(`${sim.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'sim-chat', messages: [] }) });
 * await sim.close();
 */
export async function startSimulator(options: SimulatorOptions): Promise<RunningSimulator> {
  const state = createState(options);
  const host = options.host ?? '127.0.0.1';
  const server = createServer({ noDelay: true }, (req, res) => route(state, req, res));
  // Outlive typical client keep-alive (undici: 4 s) so a reused socket is not closed under a
  // request.
  server.keepAliveTimeout = 65_000;
  await listen(server, host, options.port ?? 0);
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | null = null;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const job of [...state.jobs]) job.cancel();
        for (const scheduler of state.metrics.schedulers.values()) scheduler.close();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
    stats: () => state.metrics.stats(),
  };
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function route(state: SimState, req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  const path = query < 0 ? url : url.slice(0, query);
  const method = req.method ?? 'GET';
  const starting = Date.now() < state.readyAt;
  switch (path) {
    case '/health':
    case '/ping':
      if (method !== 'GET' && !(path === '/ping' && method === 'POST'))
        return sendDetail(res, 405, 'Method Not Allowed');
      res.writeHead(starting ? 503 : 200, { 'content-length': 0 });
      res.end();
      return;
    case '/metrics':
      if (method !== 'GET') return sendDetail(res, 405, 'Method Not Allowed');
      res.writeHead(200, { 'content-type': METRICS_TYPE });
      res.end(state.metrics.render());
      return;
    case '/version':
      if (method !== 'GET') return sendDetail(res, 405, 'Method Not Allowed');
      return sendJson(res, 200, JSON.stringify({ version: SIM_VERSION }));
    case '/v1/models':
      if (method !== 'GET') return sendDetail(res, 405, 'Method Not Allowed');
      if (starting) return sendJson(res, 503, STARTING_BODY);
      return sendJson(res, 200, modelsJson(state));
    case '/v1/chat/completions':
    case '/v1/completions':
    case '/v1/embeddings':
    case '/tokenize':
      if (method !== 'POST') return sendDetail(res, 405, 'Method Not Allowed');
      if (starting) return sendJson(res, 503, STARTING_BODY);
      void handlePost(state, path, req, res);
      return;
    default:
      sendDetail(res, 404, 'Not Found');
  }
}

async function handlePost(state: SimState, path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    const body = parseJsonObject(await readBody(req));
    if (path === '/tokenize') return sendJson(res, 200, tokenizeJson(state, body));
    const fault = readFault(req, body);
    const failure = immediateFailure(fault, state.failureRate);
    if (failure) return sendError(res, failure);
    if (path === '/v1/chat/completions') {
      await runChat(state, planChat(state, body), res, streamFault(fault));
    } else if (path === '/v1/completions') {
      await runCompletion(state, planCompletion(state, body), res, streamFault(fault));
    } else {
      await runEmbeddings(state, planEmbeddings(state, body), res, streamFault(fault));
    }
  } catch (error) {
    if (res.destroyed) return;
    sendError(res, error instanceof SimHttpError ? error : internalError(`Simulator error: ${String(error)}`));
  }
}
