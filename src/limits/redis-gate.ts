import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Admission, AdmissionGate, AdmitRequest, LiveRequest, Release, Reported, WalletState } from './gate.js';

export interface RedisGateOptions {
  /** Prefix of every key, so deployments can share one Redis. */
  prefix: string;
  /** A concurrency slot of a replica that died is freed after at most this long. */
  concurrencyLeaseMs: number;
  /** A hold of a replica that died is given back after at most this long. */
  holdLeaseMs: number;
  /**
   * After Redis comes back empty, admissions wait this long (503) so every
   * live replica's heartbeat can report its holds and unwritten charges
   * before any wallet is rebuilt.
   */
  rebuildGraceMs: number;
}

type Script = (...args: Array<string | number>) => Promise<unknown>;

const MINUTE_MS = 60_000;
const MONTH_TTL_MS = 32 * 24 * 3600 * 1000;

/**
 * The admission gate in Redis: one Lua script per admission (four limits and
 * the wallet hold), one per release. Scripts run atomically, so replicas
 * sharing this Redis never pass two requests on the same money or the same
 * slot. Windows of requests and tokens per minute start at a key's first
 * request (as rate-limiter-flexible's fixed windows do). Times are the Redis
 * server's clock, so replicas' clocks do not matter. Money crosses as
 * decimal strings and is added by HINCRBY (64-bit integers), never as a Lua
 * number.
 *
 * Keys (after the prefix): `rpm:K`, `conc:K` (a sorted set of slots scored by
 * expiry), `tpm:K`, `month:K:YYYY-MM`, `wallet:O` (`avail`: the spendable
 * amount; `ver`), `held:O` (request → hold), `unwritten:O` (request →
 * charge not yet known to be in PostgreSQL), `hold-expiry` (a sorted set of
 * `O|request`), `epoch` (set when this Redis's state began: its absence means
 * a Redis that lost everything).
 *
 * @example
 * const gate = createRedisGate(redis, { prefix: 'tollgate:', concurrencyLeaseMs: 30_000, holdLeaseMs: 60_000, rebuildGraceMs: 3_000 });
 */
export function createRedisGate(redis: Redis, options: RedisGateOptions): AdmissionGate {
  const { prefix } = options;
  const commands = redis as unknown as Record<string, Script>;
  const define = (name: string, keys: number, lua: string) => {
    // Defined once per connection: ioredis then sends EVALSHA, not the script, on every call.
    if (!commands[name]) redis.defineCommand(name, { numberOfKeys: keys, lua });
    return (...args: Array<string | number>) => commands[name]!(...args);
  };
  const admitScript = define('tollgateAdmit', 8, ADMIT);
  const releaseScript = define('tollgateRelease', 7, RELEASE);
  const heartbeatScript = define('tollgateHeartbeat', 2, HEARTBEAT);
  const reportScript = define('tollgateReport', 1, REPORT);
  const walletStateScript = define('tollgateWalletState', 3, WALLET_STATE);
  const setWalletScript = define('tollgateSetWallet', 1, SET_WALLET);
  const creditScript = define('tollgateCredit', 1, CREDIT);

  const key = {
    rpm: (keyId: string) => `${prefix}rpm:${keyId}`,
    conc: (keyId: string) => `${prefix}conc:${keyId}`,
    tpm: (keyId: string) => `${prefix}tpm:${keyId}`,
    month: (keyId: string, month: string) => `${prefix}month:${keyId}:${month}`,
    wallet: (orgId: string) => `${prefix}wallet:${orgId}`,
    held: (orgId: string) => `${prefix}held:${orgId}`,
    unwritten: (orgId: string) => `${prefix}unwritten:${orgId}`,
    holdExpiry: `${prefix}hold-expiry`,
    epoch: `${prefix}epoch`,
  };
  const holdMember = (orgId: string, requestId: string) => `${orgId}|${requestId}`;
  /** The epoch this replica saw at its last heartbeat. */
  let lastEpoch: string | null = null;

  return {
    async admit(request: AdmitRequest): Promise<Admission> {
      const { limits } = request;
      const reply = (await admitScript(
        key.rpm(request.keyId),
        key.conc(request.keyId),
        key.tpm(request.keyId),
        key.month(request.keyId, request.month),
        key.wallet(request.orgId),
        key.held(request.orgId),
        key.holdExpiry,
        key.epoch,
        limits ? 1 : 0,
        limits?.requestsPerMinute ?? 0,
        limits?.maxConcurrency ?? 0,
        options.concurrencyLeaseMs,
        limits?.tokensPerMinute ?? -1,
        request.estimatedTokens,
        limits?.monthlyTokens ?? -1,
        request.holdNanos === null ? '' : request.holdNanos.toString(),
        request.holdNanos === null ? '' : (-request.holdNanos).toString(),
        request.requestId,
        options.holdLeaseMs,
        holdMember(request.orgId, request.requestId),
        options.rebuildGraceMs,
        MINUTE_MS,
        MONTH_TTL_MS,
      )) as Array<string | number>;
      return admissionFrom(reply);
    },

    async release(release: Release): Promise<void> {
      await releaseScript(
        key.conc(release.keyId),
        key.tpm(release.keyId),
        key.month(release.keyId, release.month),
        key.wallet(release.orgId),
        key.held(release.orgId),
        key.holdExpiry,
        key.unwritten(release.orgId),
        release.requestId,
        release.tokenDelta,
        release.limits?.tokensPerMinute != null ? release.tokensWindowEndsAt : 0,
        release.limits?.monthlyTokens != null ? 1 : 0,
        release.held ? 1 : 0,
        release.cost === null ? '' : release.cost.toString(),
        release.cost === null ? '' : (-release.cost).toString(),
        holdMember(release.orgId, release.requestId),
      );
    },

    async seedMonth(keyId, month, tokens) {
      await redis.set(key.month(keyId, month), String(tokens), 'PX', MONTH_TTL_MS, 'NX');
    },

    async walletState(orgId): Promise<WalletState> {
      const [version, held, unwritten] = (await walletStateScript(key.wallet(orgId), key.held(orgId), key.unwritten(orgId))) as [string, string[], string[]];
      return { version, holds: pairs(orgId, held), unwritten: pairs(orgId, unwritten) };
    },

    async spendable(orgId) {
      const avail = await redis.hget(key.wallet(orgId), 'avail');
      return avail === null ? null : BigInt(avail);
    },

    async setWallet(orgId, spendable, version) {
      return (await setWalletScript(key.wallet(orgId), spendable.toString(), version)) === 1;
    },

    async credit(orgId, amount) {
      await creditScript(key.wallet(orgId), amount.toString());
    },

    async forgetWallet(orgId) {
      await redis.multi().hdel(key.wallet(orgId), 'avail').hincrby(key.wallet(orgId), 'ver', 1).exec();
    },

    async written(charges: Reported[]) {
      if (charges.length === 0) return;
      const pipeline = redis.pipeline();
      for (const charge of charges) pipeline.hdel(key.unwritten(charge.orgId), charge.requestId);
      await pipeline.exec();
    },

    async heartbeat(live: LiveRequest[]) {
      const holds = live.filter((request) => request.holdNanos !== null).map((request) => holdMember(request.orgId, request.requestId));
      const slots = live.flatMap((request) => [request.keyId, request.requestId]);
      const [created, , epoch] = (await heartbeatScript(
        key.epoch,
        key.holdExpiry,
        prefix,
        options.rebuildGraceMs,
        options.holdLeaseMs,
        options.concurrencyLeaseMs,
        holds.length,
        ...holds,
        ...slots,
        randomUUID(),
      )) as [number, number, string];
      // Lost: this call began a new epoch, or another replica's did since this one last looked.
      const lost = created === 1 || (lastEpoch !== null && epoch !== lastEpoch);
      lastEpoch = epoch;
      return lost;
    },

    async report(holds, unwritten) {
      const flat = (items: Reported[]) => items.flatMap((item) => [item.orgId, item.requestId, item.amount.toString()]);
      await reportScript(key.holdExpiry, prefix, options.holdLeaseMs, holds.length, ...flat(holds), ...flat(unwritten));
    },
  };
}

function pairs(orgId: string, flat: string[]): Reported[] {
  const out: Reported[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push({ orgId, requestId: flat[i]!, amount: BigInt(flat[i + 1]!) });
  return out;
}

function admissionFrom(reply: Array<string | number>): Admission {
  const [outcome, a, b, c, d] = reply as [string, number, number, number, number];
  switch (outcome) {
    case 'admitted':
      return { outcome, requests: { used: a, resetMs: b }, tokens: c >= 0 ? { used: c, resetMs: d } : null, tokensWindowEndsAt: Number(reply[5]) + d };
    case 'rate_limit_exceeded':
      return { outcome, requests: { used: a, resetMs: b } };
    case 'concurrency_limit_exceeded':
      return { outcome, inFlight: a, requests: { used: b, resetMs: c } };
    case 'tokens_limit_exceeded':
      return { outcome, tokens: { used: a, resetMs: b }, requests: { used: c, resetMs: d } };
    case 'monthly_quota_exceeded':
      return { outcome, used: a, requests: { used: c, resetMs: d } };
    case 'insufficient_funds':
    case 'wallet_unknown':
    case 'month_unknown':
      return { outcome };
    case 'rebuilding':
      return { outcome, retryMs: a };
    default:
      throw new Error(`unexpected admission reply ${String(outcome)}`);
  }
}

const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

// KEYS: rpm, conc, tpm, month, wallet, held, hold-expiry, epoch.
// ARGV: limits on, rpm limit, concurrency limit, slot lease ms, tpm limit (-1: none), estimate, monthly limit (-1: none),
//       hold, minus hold ('': billing off), request id, hold lease ms, hold member, rebuild grace ms, minute ms, month ttl ms.
// Everything is checked before anything is taken: a refused request takes nothing.
const ADMIT = `${NOW}
local billing = ARGV[8] ~= ''
if billing then
  local epoch = redis.call('GET', KEYS[8])
  -- No epoch: this Redis lost its state and no heartbeat has seen it yet (heartbeats start the grace).
  if not epoch then return {'rebuilding', tonumber(ARGV[13])} end
  local resume = tonumber(string.match(epoch, '^(%d+)'))
  if now < resume then return {'rebuilding', resume - now} end
  local avail = redis.call('HGET', KEYS[5], 'avail')
  if not avail then return {'wallet_unknown'} end
  if avail == '0' or string.sub(avail, 1, 1) == '-' then return {'insufficient_funds'} end
end
local minute = tonumber(ARGV[14])
local rpmUsed, rpmReset, tpmUsed, tpmReset = 0, 0, -1, 0
if ARGV[1] == '1' then
  local est = tonumber(ARGV[6])
  rpmUsed = tonumber(redis.call('GET', KEYS[1]) or '0') + 1
  rpmReset = redis.call('PTTL', KEYS[1])
  if rpmReset < 0 then rpmReset = minute end
  if rpmUsed > tonumber(ARGV[2]) then return {'rate_limit_exceeded', rpmUsed, rpmReset} end
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  local inFlight = redis.call('ZCARD', KEYS[2])
  if inFlight >= tonumber(ARGV[3]) then return {'concurrency_limit_exceeded', inFlight, rpmUsed, rpmReset} end
  if tonumber(ARGV[5]) >= 0 then
    tpmUsed = tonumber(redis.call('GET', KEYS[3]) or '0') + est
    tpmReset = redis.call('PTTL', KEYS[3])
    if tpmReset < 0 then tpmReset = minute end
    if tpmUsed > tonumber(ARGV[5]) then return {'tokens_limit_exceeded', tpmUsed, tpmReset, rpmUsed, rpmReset} end
  end
  if tonumber(ARGV[7]) >= 0 then
    local month = redis.call('GET', KEYS[4])
    if not month then return {'month_unknown'} end
    if tonumber(month) + est > tonumber(ARGV[7]) then return {'monthly_quota_exceeded', tonumber(month), 0, rpmUsed, rpmReset} end
  end
  redis.call('INCR', KEYS[1])
  if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], minute) end
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[10])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
  if tonumber(ARGV[5]) >= 0 then
    redis.call('INCRBY', KEYS[3], est)
    if redis.call('PTTL', KEYS[3]) < 0 then redis.call('PEXPIRE', KEYS[3], minute) end
  end
  if tonumber(ARGV[7]) >= 0 then
    redis.call('INCRBY', KEYS[4], est)
    redis.call('PEXPIRE', KEYS[4], ARGV[15])
  end
end
if billing then
  redis.call('HINCRBY', KEYS[5], 'avail', ARGV[9])
  redis.call('HINCRBY', KEYS[5], 'ver', 1)
  redis.call('HSET', KEYS[6], ARGV[10], ARGV[8])
  redis.call('ZADD', KEYS[7], now + tonumber(ARGV[11]), ARGV[12])
end
return {'admitted', rpmUsed, rpmReset, tpmUsed, tpmReset, now}
`;

// KEYS: conc, tpm, month, wallet, held, hold-expiry, unwritten.
// ARGV: request id, token delta, tpm window end (0: no tpm limit), monthly on, held, cost, minus cost ('': none), hold member.
// The hold comes back and the cost goes out; a hold already gone (expired, or lost with a Redis restart) gives nothing back.
const RELEASE = `${NOW}
redis.call('ZREM', KEYS[1], ARGV[1])
local delta = tonumber(ARGV[2])
if delta ~= 0 then
  local windowEnd = tonumber(ARGV[3])
  if windowEnd > 0 and (delta > 0 or now < windowEnd) and redis.call('EXISTS', KEYS[2]) == 1 then redis.call('INCRBY', KEYS[2], delta) end
  if ARGV[4] == '1' and redis.call('EXISTS', KEYS[3]) == 1 then redis.call('INCRBY', KEYS[3], delta) end
end
if ARGV[5] == '1' or ARGV[6] ~= '' then
  local known = redis.call('HEXISTS', KEYS[4], 'avail') == 1
  local held = redis.call('HGET', KEYS[5], ARGV[1])
  if held then
    redis.call('HDEL', KEYS[5], ARGV[1])
    redis.call('ZREM', KEYS[6], ARGV[8])
    if known then redis.call('HINCRBY', KEYS[4], 'avail', held) end
  end
  if ARGV[6] ~= '' then
    if known then redis.call('HINCRBY', KEYS[4], 'avail', ARGV[7]) end
    redis.call('HSET', KEYS[7], ARGV[1], ARGV[6])
  end
  redis.call('HINCRBY', KEYS[4], 'ver', 1)
end
return 1
`;

// KEYS: epoch, hold-expiry. ARGV: prefix, rebuild grace ms, hold lease ms, slot lease ms, number of holds, hold members…, then key id / request id pairs,
// and last the new epoch's id. The epoch is "<resume at ms>:<id>": each replica compares it with the one it saw last.
// Returns {1 when this call started a new epoch, expired holds given back, the epoch}.
const HEARTBEAT = `${NOW}
local fresh = 0
local epoch = redis.call('GET', KEYS[1])
if not epoch then
  epoch = (now + tonumber(ARGV[2])) .. ':' .. ARGV[#ARGV]
  redis.call('SET', KEYS[1], epoch)
  fresh = 1
end
local holds = tonumber(ARGV[5])
for i = 1, holds do redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[3]), ARGV[5 + i]) end
local i = 6 + holds
while i + 1 < #ARGV do
  local slots = ARGV[1] .. 'conc:' .. ARGV[i]
  if redis.call('ZADD', slots, 'XX', 'CH', now + tonumber(ARGV[4]), ARGV[i + 1]) == 1 then redis.call('PEXPIRE', slots, ARGV[4]) end
  i = i + 2
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 1000)
for _, member in ipairs(expired) do
  local bar = string.find(member, '|', 1, true)
  local org = string.sub(member, 1, bar - 1)
  local request = string.sub(member, bar + 1)
  local held = redis.call('HGET', ARGV[1] .. 'held:' .. org, request)
  if held then
    redis.call('HDEL', ARGV[1] .. 'held:' .. org, request)
    local wallet = ARGV[1] .. 'wallet:' .. org
    if redis.call('HEXISTS', wallet, 'avail') == 1 then redis.call('HINCRBY', wallet, 'avail', held) end
    redis.call('HINCRBY', wallet, 'ver', 1)
  end
  redis.call('ZREM', KEYS[2], member)
end
return {fresh, #expired, epoch}
`;

// KEYS: hold-expiry. ARGV: prefix, hold lease ms, number of holds, then (org, request, amount) triples: holds, then unwritten charges.
// Reporting never moves a spendable amount: the rebuild reads these.
const REPORT = `${NOW}
local holds = tonumber(ARGV[3])
local i = 4
local n = 0
while i + 2 <= #ARGV do
  local org, request, amount = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if n < holds then
    redis.call('HSET', ARGV[1] .. 'held:' .. org, request, amount)
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), org .. '|' .. request)
  else
    redis.call('HSET', ARGV[1] .. 'unwritten:' .. org, request, amount)
  end
  redis.call('HINCRBY', ARGV[1] .. 'wallet:' .. org, 'ver', 1)
  n = n + 1
  i = i + 3
end
return n
`;

// KEYS: wallet, held, unwritten. Returns {version, held pairs, unwritten pairs}.
const WALLET_STATE = `
return {redis.call('HGET', KEYS[1], 'ver') or '0', redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3])}
`;

// KEYS: wallet. ARGV: spendable, version. Only into a wallet that has none, unchanged since its state was read.
const SET_WALLET = `
if redis.call('HEXISTS', KEYS[1], 'avail') == 1 then return 0 end
if (redis.call('HGET', KEYS[1], 'ver') or '0') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'avail', ARGV[1])
return 1
`;

// KEYS: wallet. ARGV: amount (signed).
const CREDIT = `
if redis.call('HEXISTS', KEYS[1], 'avail') == 1 then redis.call('HINCRBY', KEYS[1], 'avail', ARGV[1]) end
redis.call('HINCRBY', KEYS[1], 'ver', 1)
return 1
`;
