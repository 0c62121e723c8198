import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../../shared/db/redis.js';
import type {
  Admission,
  AdmitRequest,
  BudgetState,
  LimitGate,
  LiveRequest,
  RateAdmission,
  RateRequest,
  RateTaken,
  Release,
  Reported,
  WalletState,
} from './gate.js';
import { admissionFrom, pairs, rateAdmissionFrom } from './redis-replies.js';
import { ADMIT_RATE, GIVE_BACK_RATE } from './redis-rate-scripts.js';
import { ADMIT, EPOCH, RELEASE } from './redis-scripts.js';
import { CREDIT, SET_WALLET, WALLET_STATE } from './redis-wallet-scripts.js';
import { BUDGET_STATE, budgetArgs, SET_BUDGET } from './redis-budget-scripts.js';
import { budgetLimitName, type BudgetScope, type Budgets } from './budgets.js';
import { defineScript, gateKeys, type GateKeys, holdMember, type Script } from './redis-keys.js';
import { HoldSweeps } from './redis-sweeps.js';
import { FailoverWatch } from './redis-failover.js';

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
 * createRedisGate(redis, { prefix: 'tollgate:', concurrencyLeaseMs: 30_000, holdLeaseMs: 60_000, rebuildGraceMs: 3_000 });
 */
export function createRedisGate(redis: RedisClient, options: RedisGateOptions): LimitGate {
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
  private readonly epochScript: Script;
  /** The heartbeat's per-organization work and the report (`redis-sweeps.ts`). */
  private readonly sweeps: HoldSweeps;
  private readonly walletStateScript: Script;
  private readonly setWalletScript: Script;
  private readonly creditScript: Script;
  private readonly budgetStateScript: Script;
  private readonly setBudgetScript: Script;
  /** The epoch this replica saw at its last heartbeat. */
  private lastEpoch: string | null = null;
  /** Sees a failover that lost the last writes (`redis-failover.ts`). */
  private readonly failovers: FailoverWatch;
  /** When that epoch's rebuild grace ends (Redis clock, ms; 0 before the first heartbeat). */
  private resumeAt = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: RedisGateOptions,
  ) {
    this.key = gateKeys(options.prefix);
    this.admitScript = defineScript(redis, ADMIT);
    this.admitRateScript = defineScript(redis, ADMIT_RATE);
    this.giveBackRateScript = defineScript(redis, GIVE_BACK_RATE);
    this.releaseScript = defineScript(redis, RELEASE);
    this.epochScript = defineScript(redis, EPOCH);
    this.sweeps = new HoldSweeps(redis, this.key, options);
    this.failovers = new FailoverWatch(redis, options.prefix);
    this.walletStateScript = defineScript(redis, WALLET_STATE);
    this.setWalletScript = defineScript(redis, SET_WALLET);
    this.creditScript = defineScript(redis, CREDIT);
    this.budgetStateScript = defineScript(redis, BUDGET_STATE);
    this.setBudgetScript = defineScript(redis, SET_BUDGET);
  }

  /** Commands wait for auto-pipelining's next write, a `setImmediate` away. */
  get writesQueued(): boolean {
    return this.redis.autoPipelineQueueSize > 0;
  }

  async admitRate(request: RateRequest): Promise<RateAdmission> {
    if (this.failovers.checking) await this.failovers.checking.catch(() => {});
    const { limits } = request;
    const admitRate = request.alone ? this.admitRateScript.alone : this.admitRateScript;
    const reply = (await admitRate(
      this.key.rpm(request.orgId, request.keyId),
      this.key.conc(request.orgId, request.keyId),
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
      this.key.rpm(taken.orgId, taken.keyId),
      this.key.conc(taken.orgId, taken.keyId),
      taken.requestId,
      taken.windowEndsAt,
    );
  }

  async admit(request: AdmitRequest): Promise<Admission> {
    const { key, options } = this;
    const { limits } = request;
    if (this.failovers.checking) await this.failovers.checking.catch(() => {});
    const { orgId, keyId } = request;
    if (request.holdNanos !== null) this.sweeps.register(orgId);
    const admit = request.alone ? this.admitScript.alone : this.admitScript;
    const reply = (await admit(
      key.rpm(orgId, keyId),
      key.conc(orgId, keyId),
      key.tpm(orgId, keyId),
      key.month(orgId, keyId, request.month),
      key.wallet(orgId),
      key.held(orgId),
      key.holdExpiry(orgId),
      key.btag(orgId),
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
      holdMember(orgId, request.requestId),
      this.resumeAt,
      MINUTE_MS,
      MONTH_TTL_MS,
      request.rateTaken ? 1 : 0,
      key.org(orgId),
      ...budgetArgs(request),
    )) as Array<string | number>;
    return admissionFrom(reply);
  }

  async release(release: Release): Promise<void> {
    const { key } = this;
    const { orgId, keyId } = release;
    const releaseScript = release.alone ? this.releaseScript.alone : this.releaseScript;
    await releaseScript(
      key.conc(orgId, keyId),
      key.tpm(orgId, keyId),
      key.month(orgId, keyId, release.month),
      key.wallet(orgId),
      key.held(orgId),
      key.holdExpiry(orgId),
      key.unwritten(orgId),
      key.btag(orgId),
      release.requestId,
      release.tokenDelta,
      release.limits?.tokensPerMinute != null ? release.tokensWindowEndsAt : 0,
      release.limits?.monthlyTokens != null ? 1 : 0,
      release.held ? 1 : 0,
      release.cost === null ? '' : release.cost.toString(),
      release.cost === null ? '' : (-release.cost).toString(),
      holdMember(orgId, release.requestId),
      key.org(orgId),
      release.budgetTag ?? '',
    );
  }

  async seedMonth(orgId: string, keyId: string, month: string, tokens: number): Promise<void> {
    // NX: a count already there (another replica seeded it, or requests already counted) is kept.
    await this.redis.set(this.key.month(orgId, keyId, month), String(tokens), 'PX', MONTH_TTL_MS, 'NX');
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
    // Command by command, not one pipeline (a Redis Cluster's pipeline must stay on one node): auto-pipelining
    // still sends those issued together in one write per node.
    await Promise.all(
      charges.flatMap((charge) => [
        this.redis.hdel(this.key.unwritten(charge.orgId), charge.requestId),
        this.redis.hdel(this.key.btag(charge.orgId), charge.requestId),
      ]),
    );
  }

  async heartbeat(live: LiveRequest[]): Promise<boolean> {
    const [[created, epoch]] = await Promise.all([
      this.epochScript(this.key.epoch, this.options.rebuildGraceMs, randomUUID()) as Promise<[number, string]>,
      this.failovers.check().catch(() => {}),
    ]);
    // Lost: this call began a new epoch, or another replica's did since this one last looked, or a failover lost
    // the old master's last writes (what they counted is forgotten, and rebuilt).
    const lost = created === 1 || (this.lastEpoch !== null && epoch !== this.lastEpoch) || this.failovers.takeLoss();
    this.lastEpoch = epoch;
    this.resumeAt = Number(epoch.slice(0, epoch.indexOf(':')));
    if (lost) this.sweeps.forgetRegistered();
    await this.sweeps.sweep(live);
    return lost;
  }

  report(holds: Reported[], unwritten: Reported[]): Promise<void> {
    return this.sweeps.report(holds, unwritten);
  }

  async budgetState(orgId: string, counter: string): Promise<BudgetState> {
    const { key } = this;
    const [version, held, unwritten] = (await this.budgetStateScript(
      key.counter(orgId, counter),
      key.held(orgId),
      key.unwritten(orgId),
      key.btag(orgId),
      counter,
    )) as [string, string[], string[]];
    return { version, holds: pairs(orgId, held), unwritten: pairs(orgId, unwritten) };
  }

  async setBudgetSpent(orgId: string, counter: string, spent: bigint, version: string, ttlMs: number) {
    return (await this.setBudgetScript(this.key.counter(orgId, counter), spent.toString(), version, ttlMs)) === 1;
  }

  async forgetBudget(orgId: string, counter: string): Promise<void> {
    const count = this.key.counter(orgId, counter);
    // The version moves too, so that a rebuild already under way is not kept.
    await this.redis.multi().hdel(count, 'spent').hincrby(count, 'ver', 1).exec();
  }

  async setBudgets(orgId: string, scope: BudgetScope, subjectId: string, budgets: Budgets, ttlMs: number) {
    const limit = (value: bigint | null) => (value === null ? 'none' : value.toString());
    const name = (window: 'month' | 'day') => this.key.counter(orgId, budgetLimitName(scope, subjectId, window));
    await this.redis
      .multi()
      .set(name('month'), limit(budgets.monthly), 'PX', ttlMs)
      .set(name('day'), limit(budgets.daily), 'PX', ttlMs)
      .exec();
  }

  async budgetSpent(orgId: string, counter: string): Promise<bigint | null> {
    const spent = await this.redis.hget(this.key.counter(orgId, counter), 'spent');
    return spent === null ? null : BigInt(spent);
  }
}
