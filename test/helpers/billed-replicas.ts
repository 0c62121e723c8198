import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { expect } from 'vitest';
import { adminCallTo, type GatewayProcess, startGatewayProcess } from './processes.js';
import { createTestDatabase, deleteRedisPrefix, redisUrl, uniqueRedisPrefix } from './services.js';

/**
 * Gateway replicas that bill, for tests of what a fleet charges: `node
 * dist/main.js` processes sharing one PostgreSQL database of the test's own,
 * one Redis key prefix and one engine (the simulator at `simUrl`, serving
 * `sim-chat`), each with a data folder (and so a charge journal) of its own
 * name, so a replica killed and started again under that name replays it.
 * `close` kills every replica still running, then drops the database, the
 * Redis keys and the folders.
 *
 * @example
 * const fleet = await billedReplicas({ adminToken, simUrl: sim.url });
 * const one = await fleet.start('one');
 */
export interface BilledReplicas {
  /** The test's own database, for reading (and editing) the books directly. */
  sql: postgres.Sql;
  prefix: string;
  /**
   * Starts a replica (again, after a kill, under the same name: same data folder). `env` adds to
   * the fleet's settings.
   */
  start(name: string, env?: Record<string, string>): Promise<GatewayProcess>;
  /** SIGKILLs a replica: no drain, no flush, as an out-of-memory kill. */
  kill(gateway: GatewayProcess): Promise<void>;
  admin<T = Record<string, unknown>>(
    gateway: GatewayProcess,
    method: string,
    route: string,
    body?: unknown,
  ): Promise<T>;
  /** The model `sim-chat` in the catalog, at 0.15 in and 0.60 out a million tokens. */
  addSimChat(gateway: GatewayProcess): Promise<void>;
  close(): Promise<void>;
}

export async function billedReplicas(options: {
  adminToken: string;
  simUrl: string;
  /** Settings every replica runs with, beside the fleet's own. */
  env?: Record<string, string>;
  /**
   * Fields of the engine's definition beside its kind and model (`max_num_seqs`); its `urls`, when
   * given, in place of `url` (the simulator as a replica: health-checked, routed, its room
   * counted).
   */
  engine?: Record<string, unknown>;
}): Promise<BilledReplicas> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-billed-replicas-'));
  const running = new Set<GatewayProcess>();
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let sql: postgres.Sql | undefined;
  const prefix = uniqueRedisPrefix();
  const close = async () => {
    await Promise.allSettled([...running].map((g) => g.child.stop('SIGKILL')));
    await sql?.end().catch(() => {});
    await deleteRedisPrefix(prefix).catch(() => {});
    await database?.drop().catch(() => {});
    await rm(tmp, { recursive: true, force: true });
  };
  try {
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({
        engines: [
          {
            kind: 'static',
            model: 'sim-chat',
            ...(options.engine?.urls ? {} : { url: options.simUrl }),
            ...options.engine,
          },
        ],
      }),
    );
    database = await createTestDatabase();
    sql = postgres(database.url, { max: 2, onnotice: () => {} });
  } catch (error) {
    await close();
    throw error;
  }
  const url = database.url;
  const admin = <T>(gateway: GatewayProcess, method: string, route: string, body?: unknown) =>
    adminCallTo<T>(gateway.url, options.adminToken, method, route, body);
  return {
    sql,
    prefix,
    admin,
    close,
    async start(name, env = {}) {
      const gateway = await startGatewayProcess(name, {
        DATABASE_URL: url,
        REDIS_URL: redisUrl,
        TOLLGATE_REDIS_PREFIX: prefix,
        TOLLGATE_ADMIN_TOKEN: options.adminToken,
        TOLLGATE_SEED_DEMO: 'false',
        TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json'),
        TOLLGATE_DATA_DIR: path.join(tmp, `data-${name}`),
        TOLLGATE_LOG_LEVEL: 'error',
        ...options.env,
        ...env,
      });
      running.add(gateway);
      return gateway;
    },
    async kill(gateway) {
      await gateway.child.stop('SIGKILL');
      running.delete(gateway);
    },
    async addSimChat(gateway) {
      await admin(gateway, 'POST', '/models', {
        id: 'sim-chat',
        display_name: 'Sim Chat',
        hf_repo_id: 'tollgate-test/Sim-Chat-1B',
        task_type: 'chat',
        context_length: 16_384,
      });
      await admin(gateway, 'PUT', '/prices/sim-chat', { input_per_million: '0.15', output_per_million: '0.60' });
    },
  };
}

export type StreamProtocol = 'chat' | 'responses' | 'messages';

/** A stream a client is reading in the background. */
export interface WatchedStream {
  protocol: StreamProtocol;
  /** Generated tokens the client received (the text deltas it read). */
  received: number;
  /** The engine's prompt count, where the client saw it (a chat stream asking for running usage). */
  promptSeen: number | null;
  requestId: string;
  /** Resolves when the stream ends, breaks (its replica died) or is aborted. */
  ended: Promise<void>;
  /** The client gives up: it closes the connection mid-stream. */
  abort(): void;
}

/**
 * What each protocol's streamed request looks like, and how its client counts the generated tokens
 * it read.
 */
export const streamRequests: Record<
  StreamProtocol,
  { path: string; body: (max: number, prompt: string) => unknown; delta: RegExp }
> = {
  chat: {
    path: '/v1/chat/completions',
    body: (max, prompt) => ({
      model: 'sim-chat',
      stream: true,
      max_tokens: max,
      ignore_eos: true,
      stream_options: { include_usage: true, continuous_usage_stats: true },
      messages: [{ role: 'user', content: prompt }],
    }),
    delta: /"delta":\{"content":"[^"]/g,
  },
  responses: {
    path: '/v1/responses',
    body: (max, prompt) => ({ model: 'sim-chat', stream: true, max_output_tokens: max, input: prompt }),
    delta: /event: response\.output_text\.delta\n/g,
  },
  messages: {
    path: '/v1/messages',
    body: (max, prompt) => ({
      model: 'sim-chat',
      stream: true,
      max_tokens: max,
      messages: [{ role: 'user', content: prompt }],
    }),
    delta: /event: content_block_delta\n/g,
  },
};

/**
 * Opens a stream and reads it in the background, counting what its client received, until it ends,
 * breaks or is aborted.
 */
export async function watchStream(
  gateway: GatewayProcess,
  secret: string,
  protocol: StreamProtocol,
  max: number,
  prompt: string,
): Promise<WatchedStream> {
  const request = streamRequests[protocol];
  const controller = new AbortController();
  const response = await fetch(`${gateway.url}${request.path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(request.body(max, prompt)),
    signal: controller.signal,
  });
  expect(response.status).toBe(200);
  const watched: WatchedStream = {
    protocol,
    received: 0,
    promptSeen: null,
    requestId: response.headers.get('x-request-id')!,
    ended: Promise.resolve(),
    abort: () => controller.abort(),
  };
  const decoder = new TextDecoder();
  let pending = '';
  watched.ended = (async () => {
    try {
      for await (const bytes of response.body!) {
        pending += decoder.decode(bytes, { stream: true });
        const cut = pending.lastIndexOf('\n\n');
        if (cut < 0) continue;
        const events = pending.slice(0, cut + 2);
        pending = pending.slice(cut + 2);
        watched.received += events.match(request.delta)?.length ?? 0;
        const prompt = /"prompt_tokens":(\d+)/.exec(events);
        if (prompt) watched.promptSeen = Number(prompt[1]);
      }
    } catch {
      // The replica died, or the client aborted: the stream breaks off here.
    }
  })();
  return watched;
}

/** A request of one protocol, answered as JSON or streamed. */
export type BilledCallKind = `${StreamProtocol} ${'json' | 'stream'}`;

const jsonRequests: Record<StreamProtocol, { path: string; body: (max: number, prompt: string) => unknown }> = {
  chat: {
    path: '/v1/chat/completions',
    body: (max, prompt) => ({ model: 'sim-chat', max_tokens: max, messages: [{ role: 'user', content: prompt }] }),
  },
  messages: {
    path: '/v1/messages',
    body: (max, prompt) => ({ model: 'sim-chat', max_tokens: max, messages: [{ role: 'user', content: prompt }] }),
  },
  responses: {
    path: '/v1/responses',
    body: (max, prompt) => ({ model: 'sim-chat', max_output_tokens: max, input: prompt }),
  },
};

/** One short request (12 tokens asked for) answered to its end, JSON or streamed: its request id. */
export async function billedCall(
  gateway: GatewayProcess,
  secret: string,
  kind: BilledCallKind,
  prompt: string,
): Promise<string> {
  const [protocol, form] = kind.split(' ') as [StreamProtocol, 'json' | 'stream'];
  if (form === 'stream') {
    const stream = await watchStream(gateway, secret, protocol, 12, prompt);
    await stream.ended;
    expect(stream.received, `${kind} ${stream.requestId}`).toBe(12);
    return stream.requestId;
  }
  const response = await fetch(`${gateway.url}${jsonRequests[protocol].path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(jsonRequests[protocol].body(12, prompt)),
  });
  expect(response.status, `${kind}: ${await response.clone().text()}`).toBe(200);
  await response.arrayBuffer();
  return response.headers.get('x-request-id')!;
}
