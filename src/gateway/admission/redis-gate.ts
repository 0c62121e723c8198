import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../../shared/db/redis.js';
import type { Admission, AdmitRequest, LimitGate, RateAnswer, RateRequest, RateTaken, Release } from './gate.js';
import type { BudgetState, LiveRequest, Reported, WalletState } from './gate-state.js';
import { admissionFrom, pairs, rateAnswerFrom } from './redis-replies.js';
import { ADMIT_RATE, GIVE_BACK_RATE } from './redis-rate-scripts.js';
import { EPOCH } from './redis-scripts.js';
import { CREDIT, SET_WALLET, WALLET_STATE } from './redis-wallet-scripts.js';
import { BUDGET_STATE, SET_BUDGET } from './redis-budget-scripts.js';
import { budgetLimitName, type BudgetScope, type Budgets } from './budgets.js';
import { gateKeys, type GateKeys } from './redis-keys.js';
import { admitArgv, defineGateScripts, MINUTE_MS, MONTH_TTL_MS, releaseArgv } from './redis-gate-calls.js';
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

/**
 * The limits gate in Redis: one Lua script per admission (four limits and the wallet hold; or two,
 * requests per minute and concurrency first, `redis-rate-scripts.ts`), one per release
 * (`redis-scripts.ts`). Scripts run atomically, so replicas sharing this Redis never pass two
 * requests on the same money or the same slot. Windows of requests and tokens per minute start at a
 * key's first request (as rate-limiter-flexible's fixed windows do). The keys it keeps are listed
 * at `gateKeys`.
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
  /** The gate's scripts, defined on this connection. */
  private readonly scripts: ReturnType<typeof defineGateScripts>;
  /** The heartbeat's per-organization work and the report (`redis-sweeps.ts`). */
  private readonly sweeps: HoldSweeps;
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
    // One count of replies awaited for every script on the connection: a call is written alone only
    // when none is.
    const awaited = { count: 0 };
    this.scripts = defineGateScripts(redis, awaited);
    this.sweeps = new HoldSweeps(redis, this.key, options, awaited);
    this.failovers = new FailoverWatch(redis, options.prefix);
  }

  /** Commands wait for auto-pipelining's next write, a `setImmediate` away. */
  get writesQueued(): boolean {
    return this.redis.autoPipelineQueueSize > 0;
  }

  async admitRate(request: RateRequest): Promise<RateAnswer> {
    if (this.failovers.checking) await this.failovers.checking.catch(() => {});
    const { limits } = request;
    const admitRate = request.alone ? this.scripts.admitRate.alone : this.scripts.admitRate;
    const reply = (await admitRate(
      ...ADMIT_RATE.argv(
        { rpm: this.key.rpm(request.orgId, request.keyId), conc: this.key.conc(request.orgId, request.keyId) },
        {
          rpmLimit: limits.requestsPerMinute,
          concLimit: limits.maxConcurrency,
          slotLeaseMs: this.options.concurrencyLeaseMs,
          requestId: request.requestId,
          minuteMs: MINUTE_MS,
        },
      ),
    )) as Array<string | number>;
    return rateAnswerFrom(reply);
  }

  async giveBackRate(taken: RateTaken): Promise<void> {
    await this.scripts.giveBackRate(
      ...GIVE_BACK_RATE.argv(
        { rpm: this.key.rpm(taken.orgId, taken.keyId), conc: this.key.conc(taken.orgId, taken.keyId) },
        { requestId: taken.requestId, windowEnd: taken.windowEndsAt },
      ),
    );
  }

  async admit(request: AdmitRequest): Promise<Admission> {
    if (this.failovers.checking) await this.failovers.checking.catch(() => {});
    if (request.holdNanos !== null) this.sweeps.register(request.orgId);
    const admit = request.alone ? this.scripts.admit.alone : this.scripts.admit;
    const argv = admitArgv(this.key, this.options, this.resumeAt, request);
    const reply = (await admit(...argv)) as Array<string | number>;
    return admissionFrom(reply);
  }

  async release(release: Release): Promise<void> {
    const releaseScript = release.alone ? this.scripts.release.alone : this.scripts.release;
    await releaseScript(...releaseArgv(this.key, release));
  }

  async seedMonth(orgId: string, keyId: string, month: string, tokens: number): Promise<void> {
    // NX: a count already there (another replica seeded it, or requests already counted) is kept.
    await this.redis.set(this.key.month(orgId, keyId, month), String(tokens), 'PX', MONTH_TTL_MS, 'NX');
  }

  async walletState(orgId: string): Promise<WalletState> {
    const { key } = this;
    const keys = { wallet: key.wallet(orgId), held: key.held(orgId), unwritten: key.unwritten(orgId) };
    const [version, held, unwritten] = (await this.scripts.walletState(...WALLET_STATE.argv(keys, {}))) as [
      string,
      string[],
      string[],
    ];
    return { version, holds: pairs(orgId, held), unwritten: pairs(orgId, unwritten) };
  }

  async spendable(orgId: string): Promise<bigint | null> {
    const avail = await this.redis.hget(this.key.wallet(orgId), 'avail');
    return avail === null ? null : BigInt(avail);
  }

  async setWallet(orgId: string, spendable: bigint, version: string): Promise<boolean> {
    const args = { spendable: spendable.toString(), version };
    return (await this.scripts.setWallet(...SET_WALLET.argv({ wallet: this.key.wallet(orgId) }, args))) === 1;
  }

  async credit(orgId: string, amount: bigint): Promise<void> {
    await this.scripts.credit(...CREDIT.argv({ wallet: this.key.wallet(orgId) }, { amount: amount.toString() }));
  }

  async forgetWallet(orgId: string): Promise<void> {
    // The version moves too, so that a rebuild already under way is not kept.
    await this.redis.multi().hdel(this.key.wallet(orgId), 'avail').hincrby(this.key.wallet(orgId), 'ver', 1).exec();
  }

  async written(charges: Reported[]): Promise<void> {
    // Command by command, not one pipeline (a Redis Cluster's pipeline must stay on one node):
    // auto-pipelining still sends those issued together in one write per node.
    await Promise.all(
      charges.flatMap((charge) => [
        this.redis.hdel(this.key.unwritten(charge.orgId), charge.requestId),
        this.redis.hdel(this.key.btag(charge.orgId), charge.requestId),
      ]),
    );
  }

  async heartbeat(live: LiveRequest[]): Promise<boolean> {
    const [[created, epoch]] = await Promise.all([
      this.scripts.epoch(
        ...EPOCH.argv({ epoch: this.key.epoch }, { graceMs: this.options.rebuildGraceMs, epochId: randomUUID() }),
      ) as Promise<[number, string]>,
      this.failovers.check().catch(() => {}),
    ]);
    // Lost: this call began a new epoch, or another replica's did since this one last looked, or a
    // failover lost the old master's last writes (what they counted is forgotten, and rebuilt).
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
    const keys = {
      count: key.counter(orgId, counter),
      held: key.held(orgId),
      unwritten: key.unwritten(orgId),
      btag: key.btag(orgId),
    };
    const [version, held, unwritten] = (await this.scripts.budgetState(...BUDGET_STATE.argv(keys, { counter }))) as [
      string,
      string[],
      string[],
    ];
    return { version, holds: pairs(orgId, held), unwritten: pairs(orgId, unwritten) };
  }

  async setBudgetSpent(orgId: string, counter: string, spent: bigint, version: string, ttlMs: number) {
    const args = { spent: spent.toString(), version, ttlMs };
    return (await this.scripts.setBudget(...SET_BUDGET.argv({ count: this.key.counter(orgId, counter) }, args))) === 1;
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
