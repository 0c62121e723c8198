import type { RedisClient } from '../../shared/db/redis.js';
import type { AdmitRequest, Release } from './gate.js';
import { BUDGET_STATE, budgetArgs, SET_BUDGET } from './redis-budget-scripts.js';
import { type AwaitedReplies, defineScript, type GateKeys, holdMember } from './redis-keys.js';
import { ADMIT_RATE, GIVE_BACK_RATE } from './redis-rate-scripts.js';
import type { ScriptValue } from './redis-script.js';
import { ADMIT, EPOCH, RELEASE } from './redis-scripts.js';
import { CREDIT, SET_WALLET, WALLET_STATE } from './redis-wallet-scripts.js';

export const MINUTE_MS = 60_000;
export const MONTH_TTL_MS = 32 * 24 * 3600 * 1000;

/**
 * The Redis gate's scripts, each defined on `redis` once (`defineScript`), their replies counted in
 * `awaited`.
 */
export function defineGateScripts(redis: RedisClient, awaited: AwaitedReplies) {
  return {
    admit: defineScript(redis, ADMIT, awaited),
    admitRate: defineScript(redis, ADMIT_RATE, awaited),
    giveBackRate: defineScript(redis, GIVE_BACK_RATE, awaited),
    release: defineScript(redis, RELEASE, awaited),
    epoch: defineScript(redis, EPOCH, awaited),
    walletState: defineScript(redis, WALLET_STATE, awaited),
    setWallet: defineScript(redis, SET_WALLET, awaited),
    credit: defineScript(redis, CREDIT, awaited),
    budgetState: defineScript(redis, BUDGET_STATE, awaited),
    setBudget: defineScript(redis, SET_BUDGET, awaited),
  };
}

/** `ADMIT`'s call for a request, by its keys' and arguments' names. */
export function admitArgv(
  key: GateKeys,
  options: { concurrencyLeaseMs: number; holdLeaseMs: number },
  resumeAt: number,
  request: AdmitRequest,
): ScriptValue[] {
  const { orgId, keyId, limits } = request;
  const keys = {
    rpm: key.rpm(orgId, keyId),
    conc: key.conc(orgId, keyId),
    tpm: key.tpm(orgId, keyId),
    month: key.month(orgId, keyId, request.month),
    wallet: key.wallet(orgId),
    held: key.held(orgId),
    holdExpiry: key.holdExpiry(orgId),
    btag: key.btag(orgId),
  };
  const args = {
    limitsOn: limits ? 1 : 0,
    rpmLimit: limits?.requestsPerMinute ?? 0,
    concLimit: limits?.maxConcurrency ?? 0,
    slotLeaseMs: options.concurrencyLeaseMs,
    tpmLimit: limits?.tokensPerMinute ?? -1,
    estimate: request.estimatedTokens,
    monthlyLimit: limits?.monthlyTokens ?? -1,
    hold: request.holdNanos === null ? '' : request.holdNanos.toString(),
    minusHold: request.holdNanos === null ? '' : (-request.holdNanos).toString(),
    requestId: request.requestId,
    holdLeaseMs: options.holdLeaseMs,
    holdMember: holdMember(orgId, request.requestId),
    resumeAt,
    minuteMs: MINUTE_MS,
    monthTtlMs: MONTH_TTL_MS,
    rateTaken: request.rateTaken ? 1 : 0,
    orgPrefix: key.org(orgId),
  };
  return ADMIT.argv(keys, args, budgetArgs(request));
}

/** `RELEASE`'s call for a request's end, by its keys' and arguments' names. */
export function releaseArgv(key: GateKeys, release: Release): ScriptValue[] {
  const { orgId, keyId } = release;
  const keys = {
    conc: key.conc(orgId, keyId),
    tpm: key.tpm(orgId, keyId),
    month: key.month(orgId, keyId, release.month),
    wallet: key.wallet(orgId),
    held: key.held(orgId),
    holdExpiry: key.holdExpiry(orgId),
    unwritten: key.unwritten(orgId),
    btag: key.btag(orgId),
  };
  const args = {
    requestId: release.requestId,
    tokenDelta: release.tokenDelta,
    tokensWindowEnd: release.limits?.tokensPerMinute != null ? release.tokensWindowEndsAt : 0,
    monthlyOn: release.limits?.monthlyTokens != null ? 1 : 0,
    held: release.held ? 1 : 0,
    cost: release.cost === null ? '' : release.cost.toString(),
    minusCost: release.cost === null ? '' : (-release.cost).toString(),
    holdMember: holdMember(orgId, release.requestId),
    orgPrefix: key.org(orgId),
    budgetTag: release.budgetTag ?? '',
  };
  return RELEASE.argv(keys, args);
}
