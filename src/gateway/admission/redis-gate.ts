import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type {
  Admission,
  AdmitRequest,
  LimitGate,
  LiveRequest,
  RateAdmission,
  RateRequest,
  RateTaken,
  Release,
  Reported,
  WalletState,
} from './gate.js';
import { admissionFrom, flatReported, pairs, rateAdmissionFrom } from './redis-replies.js';
import { ADMIT_RATE, GIVE_BACK_RATE } from './redis-rate-scripts.js';
import {
  ADMIT,
  CREDIT,
  type GateScript,
  HEARTBEAT,
  RELEASE,
  REPORT,
  SET_WALLET,
  WALLET_STATE,
} from './redis-scripts.js';

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
 * The limits gate in Redis: one Lua script per admission (four limits and
 * the wallet hold; or two, requests per minute and concurrency first, `redis-rate-scripts.ts`), one per release (`redis-scripts.ts`). Scripts run
 * atomically, so replicas sharing this Redis never pass two requests on the
 * same money or the same slot. Windows of requests and tokens per minute
 * start at a key's first request (as rate-limiter-flexible's fixed windows
 * do). The keys it keeps are listed at `gateKeys`.
 *
 * @example
 * const gate = createRedisGate(redis, { prefix: 'tollgate:', concurrencyLeaseMs: 30_000, holdLeaseMs: 60_000, rebuildGraceMs: 3_000 });
 */
export function createRedisGate(redis: Redis, options: RedisGateOptions): LimitGate {
  return new RedisGate(redis, options);
}

/**
 * `createRedisGate`'s gate. Each method is at most one round trip: a script,
 * a command, or one MULTI or pipeline. Its only state here is the epoch it saw
 * last; everything else is in Redis, shared by every replica.
 */
class RedisGate implements LimitGate {
  /** The gate's key names under this deployment's prefix. */
  private readonly key: GateKeys;
  private readonly admitScript: Script;
  private readonly admitRateScript: Script;
  private readonly giveBackRateScript: Script;
  private readonly releaseScript: Script;
  private readonly heartbeatScript: Script;
  private readonly reportScript: Script;
  private readonly walletStateScript: Script;
  private readonly setWalletScript: Script;
  private readonly creditScript: Script;
  /** The epoch this replica saw at its last heartbeat. */
  private lastEpoch: string | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisGateOptions,
  ) {
    this.key = gateKeys(options.prefix);
    this.admitScript = defineScript(redis, ADMIT);
    this.admitRateScript = defineScript(redis, ADMIT_RATE);
    this.giveBackRateScript = defineScript(redis, GIVE_BACK_RATE);
    this.releaseScript = defineScript(redis, RELEASE);
    this.heartbeatScript = defineScript(redis, HEARTBEAT);
    this.reportScript = defineScript(redis, REPORT);
    this.walletStateScript = defineScript(redis, WALLET_STATE);
    this.setWalletScript = defineScript(redis, SET_WALLET);
    this.creditScript = defineScript(redis, CREDIT);
  }

  async admitRate(request: RateRequest): Promise<RateAdmission> {
    const { limits } = request;
    const reply = (await this.admitRateScript(
      this.key.rpm(request.keyId),
      this.key.conc(request.keyId),
      limits.requestsPerMinute,
      limits.maxConcurrency,
      this.options.concurrencyLeaseMs,
      request.requestId,
      MINUTE_MS,
    )) as Array<string | number>;
    return rateAdmissionFrom(reply);
  }

  async giveBackRate(taken: RateTaken): Promise<void> {
    await this.giveBackRateScript(
      this.key.rpm(taken.keyId),
      this.key.conc(taken.keyId),
      taken.requestId,
      taken.windowEndsAt,
    );
  }

  async admit(request: AdmitRequest): Promise<Admission> {
    const { key, options } = this;
    const { limits } = request;
    const reply = (await this.admitScript(
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
      request.rateTaken ? 1 : 0,
    )) as Array<string | number>;
    return admissionFrom(reply);
  }

  async release(release: Release): Promise<void> {
    const { key } = this;
    await this.releaseScript(
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
  }

  async seedMonth(keyId: string, month: string, tokens: number): Promise<void> {
    // NX: a count already there (another replica seeded it, or requests already counted) is kept.
    await this.redis.set(this.key.month(keyId, month), String(tokens), 'PX', MONTH_TTL_MS, 'NX');
  }

  async walletState(orgId: string): Promise<WalletState> {
    const { key } = this;
    const [version, held, unwritten] = (await this.walletStateScript(
      key.wallet(orgId),
      key.held(orgId),
      key.unwritten(orgId),
    )) as [string, string[], string[]];
    return { version, holds: pairs(orgId, held), unwritten: pairs(orgId, unwritten) };
  }

  async spendable(orgId: string): Promise<bigint | null> {
    const avail = await this.redis.hget(this.key.wallet(orgId), 'avail');
    return avail === null ? null : BigInt(avail);
  }

  async setWallet(orgId: string, spendable: bigint, version: string): Promise<boolean> {
    return (await this.setWalletScript(this.key.wallet(orgId), spendable.toString(), version)) === 1;
  }

  async credit(orgId: string, amount: bigint): Promise<void> {
    await this.creditScript(this.key.wallet(orgId), amount.toString());
  }

  async forgetWallet(orgId: string): Promise<void> {
    // The version moves too, so that a rebuild already under way is not kept.
    await this.redis.multi().hdel(this.key.wallet(orgId), 'avail').hincrby(this.key.wallet(orgId), 'ver', 1).exec();
  }

  async written(charges: Reported[]): Promise<void> {
    if (charges.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const charge of charges) pipeline.hdel(this.key.unwritten(charge.orgId), charge.requestId);
    await pipeline.exec();
  }

  async heartbeat(live: LiveRequest[]): Promise<boolean> {
    const { options } = this;
    const holds = live
      .filter((request) => request.holdNanos !== null)
      .map((request) => holdMember(request.orgId, request.requestId));
    const slots = live.flatMap((request) => [request.keyId, request.requestId]);
    const [created, , epoch] = (await this.heartbeatScript(
      this.key.epoch,
      this.key.holdExpiry,
      options.prefix,
      options.rebuildGraceMs,
      options.holdLeaseMs,
      options.concurrencyLeaseMs,
      holds.length,
      ...holds,
      ...slots,
      randomUUID(),
    )) as [number, number, string];
    // Lost: this call began a new epoch, or another replica's did since this one last looked.
    const lost = created === 1 || (this.lastEpoch !== null && epoch !== this.lastEpoch);
    this.lastEpoch = epoch;
    return lost;
  }

  async report(holds: Reported[], unwritten: Reported[]): Promise<void> {
    await this.reportScript(
      this.key.holdExpiry,
      this.options.prefix,
      this.options.holdLeaseMs,
      holds.length,
      ...flatReported(holds),
      ...flatReported(unwritten),
    );
  }
}

/**
 * The gate's keys, each after the deployment's prefix (so deployments can
 * share one Redis): `rpm:K` and `tpm:K` (a key's requests and tokens this
 * minute), `conc:K` (a sorted set of its concurrency slots scored by
 * expiry), `month:K:YYYY-MM` (its tokens this month), `wallet:O` (a hash:
 * `avail`, the spendable amount; `ver`, moved by every change to the
 * wallet), `held:O` (request → hold), `unwritten:O` (request → charge not
 * yet known to be in PostgreSQL), `hold-expiry` (a sorted set of
 * `O|request`, scored by the hold's expiry), `epoch` (set when this Redis's
 * state began: its absence means a Redis that lost everything).
 *
 * Built once per gate; only the per-request names are made per call.
 */
function gateKeys(prefix: string) {
  return {
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
}

type GateKeys = ReturnType<typeof gateKeys>;

/** A hold's member in `hold-expiry`: `O|request`, which the heartbeat splits at the bar to find the hold when it expires. */
function holdMember(orgId: string, requestId: string): string {
  return `${orgId}|${requestId}`;
}

/**
 * Defines a script as a command on the connection, once per connection:
 * ioredis then sends EVALSHA, not the script, on every call.
 */
function defineScript(redis: Redis, script: GateScript): Script {
  const commands = redis as unknown as Record<string, Script>;
  const { name } = script;
  if (!commands[name]) redis.defineCommand(name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
  return (...args: Array<string | number>) => commands[name]!(...args);
}
