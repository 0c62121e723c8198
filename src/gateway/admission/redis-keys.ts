import type { Redis } from 'ioredis';
import type { GateScript } from './redis-scripts.js';

/** A script defined on the connection (`defineScript`), called with its keys, then its arguments. */
export type Script = (...args: Array<string | number>) => Promise<unknown>;

/**
 * The gate's keys, each after the deployment's prefix (so deployments can
 * share one Redis): `rpm:K` and `tpm:K` (a key's requests and tokens this
 * minute), `conc:K` (a sorted set of its concurrency slots scored by
 * expiry), `month:K:YYYY-MM` (its tokens this month), `wallet:O` (a hash:
 * `avail`, the spendable amount; `ver`, moved by every change to the
 * wallet), `held:O` (request → hold), `unwritten:O` (request → charge not
 * yet known to be in PostgreSQL), `btag:O` (request → its budget tag) and `budget:…` (each budget count's spend,
 * `redis-budget-scripts.ts`), `hold-expiry` (a sorted set of
 * `O|request`, scored by the hold's expiry), `epoch` (set when this Redis's
 * state began: its absence means a Redis that lost everything).
 *
 * Built once per gate; only the per-request names are made per call.
 */
export function gateKeys(prefix: string) {
  return {
    rpm: (keyId: string) => `${prefix}rpm:${keyId}`,
    conc: (keyId: string) => `${prefix}conc:${keyId}`,
    tpm: (keyId: string) => `${prefix}tpm:${keyId}`,
    month: (keyId: string, month: string) => `${prefix}month:${keyId}:${month}`,
    wallet: (orgId: string) => `${prefix}wallet:${orgId}`,
    held: (orgId: string) => `${prefix}held:${orgId}`,
    unwritten: (orgId: string) => `${prefix}unwritten:${orgId}`,
    btag: (orgId: string) => `${prefix}btag:${orgId}`,
    /** A budget's count (`budget:key:K:2026-11`, `budgets.ts`). */
    prefixed: (counter: string) => `${prefix}${counter}`,
    holdExpiry: `${prefix}hold-expiry`,
    epoch: `${prefix}epoch`,
  };
}

export type GateKeys = ReturnType<typeof gateKeys>;

/** A hold's member in `hold-expiry`: `O|request`, which the heartbeat splits at the bar to find the hold when it expires. */
export function holdMember(orgId: string, requestId: string): string {
  return `${orgId}|${requestId}`;
}

/**
 * Defines a script as a command on the connection, once per connection:
 * ioredis then sends EVALSHA, not the script, on every call.
 */
export function defineScript(redis: Redis, script: GateScript): Script {
  const commands = redis as unknown as Record<string, Script>;
  const { name } = script;
  if (!commands[name]) redis.defineCommand(name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
  return (...args: Array<string | number>) => commands[name]!(...args);
}
