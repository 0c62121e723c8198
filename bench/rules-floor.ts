import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import http from 'node:http';
import { Redis } from 'ioredis';

/**
 * About the least a Node.js gateway can do and still keep Tollgate's money rules: the floor relay
 * (`floor-proxy.ts`) plus, for every request, a key looked up by its SHA-256, one Redis script that
 * admits (requests a minute, concurrency, tokens a minute, the wallet), the engine's usage read
 * from its answer (a stream's running usage from its chunks), the charge appended durably (O_DSYNC;
 * charges that wait for a write share the next) before the last byte, and one Redis script that
 * settles, written to Redis before the last byte and not waited for (Redis runs one connection's
 * commands in order: the next admission comes after it, as in Tollgate's
 * `requests/billed-call.ts`). Nothing else: no answer checked or reshaped, no PostgreSQL, no
 * metrics, logs, cache, timeouts or failover. `npm run bench` with BENCH_RULES_FLOOR=1 (and
 * BENCH_REDIS_URL) measures it beside Tollgate: what the rules cost on this machine before any
 * design choice.
 *
 * @example
 * node --import tsx bench/rules-floor.ts --port 8091 --upstream http://127.0.0.1:8000 \
 *   --redis redis://127.0.0.1:6379 --journal /tmp/rules.jsonl --key tg_secret
 */
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1]!);
const required = (name: string) => args.get(name) ?? fail(`--${name} is required`);
const upstream = new URL(args.get('upstream') ?? 'http://127.0.0.1:8000');
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const redis = new Redis(required('redis'), { enableAutoPipelining: true });
/** Every key in Redis starts with this, so runs never meet and the end of a run can delete its own. */
const PREFIX = `rules-floor:${process.pid}:`;
/** The one key this floor knows, by its hash, as Tollgate keeps keys it has seen. */
const KEYS = new Map([[sha256(required('key')), { id: 'k1', wallet: 'w1' }]]);
/** Nanodollars a token, one price for all: the cost is still exact integer arithmetic. */
const PRICE_NANOS = 1_000n;
const LIMITS = { rpm: 1_000_000, concurrency: 10_000, tpm: 1_000_000_000 };

/**
 * KEYS: rpm, conc, tpm, wallet. ARGV: rpm limit, concurrency limit, tpm limit, token estimate,
 * hold, minus the hold (nanos, computed exactly in JavaScript). Checks everything before taking
 * anything, as Tollgate's admit does; returns 1 (admitted) or 0. Money stays an integer string that
 * only HINCRBY adds to: the wallet admits while what it has left is above zero.
 */
const ADMIT = `
local rpm = tonumber(redis.call('GET', KEYS[1]) or '0')
local conc = tonumber(redis.call('GET', KEYS[2]) or '0')
local tpm = tonumber(redis.call('GET', KEYS[3]) or '0')
local avail = redis.call('HGET', KEYS[4], 'avail') or '0'
if avail == '0' or string.sub(avail, 1, 1) == '-' then return 0 end
if rpm >= tonumber(ARGV[1]) or conc >= tonumber(ARGV[2]) or tpm + tonumber(ARGV[4]) > tonumber(ARGV[3]) then return 0 end
redis.call('INCR', KEYS[1]) redis.call('PEXPIRE', KEYS[1], 60000)
redis.call('INCR', KEYS[2])
redis.call('INCRBY', KEYS[3], ARGV[4]) redis.call('PEXPIRE', KEYS[3], 60000)
redis.call('HINCRBY', KEYS[4], 'avail', ARGV[6])
redis.call('HINCRBY', KEYS[4], 'held', ARGV[5])
return 1`;
/**
 * KEYS: conc, tpm, wallet. ARGV: tokens used minus the estimate, the hold less the cost (back to
 * the wallet), minus the hold (nanos).
 */
const SETTLE = `
redis.call('DECR', KEYS[1])
redis.call('INCRBY', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[3], 'avail', ARGV[2])
redis.call('HINCRBY', KEYS[3], 'held', ARGV[3])
return 1`;
redis.defineCommand('floorAdmit', { numberOfKeys: 4, lua: ADMIT });
redis.defineCommand('floorSettle', { numberOfKeys: 3, lua: SETTLE });
type ScriptCall = (...args: Array<string | number>) => Promise<number>;
const admitScript = (redis as unknown as { floorAdmit: ScriptCall }).floorAdmit.bind(redis);
const settleScript = (redis as unknown as { floorSettle: ScriptCall }).floorSettle.bind(redis);

/**
 * What `/stats` shows: the bench prints it, so a run proves every answer was charged, with the
 * engine's counts.
 */
const stats = { answered: 0, charged: 0, completionTokens: 0, journalWrites: 0, refused: 0, settleFailed: 0 };

/**
 * Appends lines durably; a line that comes while a write is under way waits for the next, which
 * carries all.
 */
class DurableLog {
  private waiting: Array<{ line: string; done: () => void; failed: (error: unknown) => void }> = [];
  private writing = false;
  constructor(private readonly handle: FileHandle) {}
  append(line: string): Promise<void> {
    return new Promise((done, failed) => {
      this.waiting.push({ line, done, failed });
      if (!this.writing) void this.writeWaiting();
    });
  }
  private async writeWaiting(): Promise<void> {
    this.writing = true;
    while (this.waiting.length > 0) {
      const batch = this.waiting;
      this.waiting = [];
      try {
        await this.handle.write(batch.map((entry) => entry.line).join(''));
        stats.journalWrites++;
        for (const entry of batch) entry.done();
      } catch (error) {
        for (const entry of batch) entry.failed(error);
      }
    }
    this.writing = false;
  }
}
const journal = new DurableLog(
  await open(
    required('journal'),
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_DSYNC,
    0o600,
  ),
);
await redis.hset(`${PREFIX}w1`, 'avail', String(10n ** 18n), 'held', '0');

const server = http.createServer((request, response) => {
  if (request.url === '/health') return void response.end('ok');
  if (request.url === '/stats') return void response.end(JSON.stringify(stats));
  const key = KEYS.get(sha256((request.headers.authorization ?? '').replace(/^Bearer /, '')));
  if (!key) return void answer(response, 401, '{"error":{"message":"invalid key"}}');
  const parts: Buffer[] = [];
  request.on('data', (part: Buffer) => parts.push(part));
  request.on(
    'end',
    () =>
      void relay(request, response, key, Buffer.concat(parts)).catch(() =>
        answer(response, 502, '{"error":{"message":"bad gateway"}}'),
      ),
  );
});
server.keepAliveTimeout = 65_000;
server.listen(Number(args.get('port') ?? 8091), '127.0.0.1');
process.once('SIGTERM', () => {
  server.close();
  void redis
    .keys(`${PREFIX}*`)
    .then((keys) => (keys.length > 0 ? redis.del(...keys) : 0))
    .finally(() => process.exit(0));
});

async function relay(
  request: http.IncomingMessage,
  response: http.ServerResponse,
  key: { id: string; wallet: string },
  raw: Buffer,
): Promise<void> {
  const body = JSON.parse(raw.toString()) as {
    max_tokens?: number;
    stream?: boolean;
    stream_options?: Record<string, boolean>;
    messages?: unknown;
    input?: unknown;
  };
  // The hold covers the most the request can cost: its prompt (about 4 characters a token) and its
  // answer.
  const promptTokens = Math.ceil(JSON.stringify(body.messages ?? body.input ?? '').length / 4);
  const estimate = promptTokens + (body.max_tokens ?? 0);
  const hold = BigInt(estimate) * PRICE_NANOS;
  const k = (name: string) => `${PREFIX}${key.id}:${name}`;
  const admitted = await admitScript(
    k('rpm'),
    k('conc'),
    k('tpm'),
    `${PREFIX}${key.wallet}`,
    LIMITS.rpm,
    LIMITS.concurrency,
    LIMITS.tpm,
    estimate,
    hold.toString(),
    (-hold).toString(),
  );
  if (admitted !== 1) {
    stats.refused++;
    return answer(response, 429, '{"error":{"message":"limit"}}');
  }
  // A stream's usage arrives only when asked for; running usage on every chunk, as Tollgate asks,
  // so that a stream cut short is still billed the engine's own count.
  if (body.stream) body.stream_options = { include_usage: true, continuous_usage_stats: true };
  const sent = body.stream ? JSON.stringify(body) : raw;
  const engine = await post(request.url ?? '/', sent);
  const charge = async (usage: Usage) => {
    const tokens = usage.prompt + usage.completion;
    const cost = BigInt(tokens) * PRICE_NANOS;
    const cappedCost = cost < hold ? cost : hold;
    await journal.append(
      `${JSON.stringify({ key: key.id, prompt: usage.prompt, completion: usage.completion, cost: cappedCost.toString(), at: Date.now() })}\n`,
    );
    stats.charged++;
    stats.completionTokens += usage.completion;
    void settleScript(
      k('conc'),
      k('tpm'),
      `${PREFIX}${key.wallet}`,
      tokens - estimate,
      (hold - cappedCost).toString(),
      (-hold).toString(),
    ).catch(() => stats.settleFailed++);
    // Auto-pipelining writes the script in a setImmediate queued before this one: written before
    // the last byte.
    await new Promise((resolve) => setImmediate(resolve));
  };
  if (!body.stream) {
    const parts: Buffer[] = [];
    for await (const part of engine) parts.push(part as Buffer);
    const bytes = Buffer.concat(parts);
    await charge(usageIn(bytes.subarray(Math.max(0, bytes.length - 512))) ?? { prompt: promptTokens, completion: 0 });
    response.writeHead(engine.statusCode ?? 502, {
      'content-type': 'application/json',
      'content-length': bytes.length,
    });
    response.end(bytes);
    stats.answered++;
    return;
  }
  // Each chunk goes on at once; the latest is kept back, so the last bytes leave after the charge.
  response.writeHead(engine.statusCode ?? 502, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let held: Buffer | null = null;
  let usage: Usage = { prompt: promptTokens, completion: 0 };
  for await (const part of engine) {
    if (held) response.write(held);
    held = part as Buffer;
    if (held.includes('"prompt_tokens"')) usage = usageIn(held) ?? usage;
  }
  await charge(usage);
  response.end(held ?? undefined);
  stats.answered++;
}

interface Usage {
  prompt: number;
  completion: number;
}

/**
 * The engine's usage, from the text that holds its last `usage` object; null when it holds none (or
 * `null`).
 */
function usageIn(bytes: Buffer): Usage | null {
  const text = bytes.toString('latin1');
  const from = text.lastIndexOf('"usage"');
  if (from < 0) return null;
  const tail = text.slice(from);
  const prompt = /"prompt_tokens"\s*:\s*(\d+)/.exec(tail);
  const completion = /"completion_tokens"\s*:\s*(\d+)/.exec(tail);
  return prompt ? { prompt: Number(prompt[1]), completion: Number(completion?.[1] ?? 0) } : null;
}

function post(path: string, body: Buffer | string): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: 'POST',
        path,
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      resolve,
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

function answer(response: http.ServerResponse, status: number, text: string): void {
  if (response.headersSent) return void response.destroy();
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(text);
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function fail(message: string): never {
  process.stderr.write(`rules-floor: ${message}\n`);
  process.exit(2);
}
