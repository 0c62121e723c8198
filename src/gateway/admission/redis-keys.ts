import type { RedisClient } from '../../shared/db/redis.js';
import type { ScriptSource } from './redis-script.js';

/**
 * A script defined on the connection (`defineScript`), called with its keys, then its arguments;
 * `alone`, the same call made by a request with no other under way on this replica.
 */
export interface Script {
  (...args: Array<string | number>): Promise<unknown>;
  alone: (...args: Array<string | number>) => Promise<unknown>;
}

/**
 * The gate's keys, each after the deployment's prefix (so deployments can share one Redis). Every
 * key an admission, a release or a rebuild touches is its organization's, under `{org:O}:` (a Redis
 * Cluster hash tag: one slot per organization, so one script never spans two slots, `CROSSSLOT`):
 * `rpm:K` and `tpm:K` (a key's requests and tokens this minute), `conc:K` (a sorted set of its
 * concurrency slots scored by expiry), `month:K:YYYY-MM` (its tokens this month), `wallet` (a hash:
 * `avail`, the spendable amount; `ver`, moved by every change to the wallet), `held` (request →
 * hold), `unwritten` (request → charge not yet known to be in PostgreSQL), `btag` (request → its
 * budget tag), `budget:…` and `blimit:…` (each budget count's spend and limit,
 * `redis-budget-scripts.ts`), `hold-expiry` (a sorted set of `O|request`, scored by the hold's
 * expiry). Outside any organization, under `{gate}:`: `epoch` (set when this Redis's state began:
 * its absence means a Redis that lost everything) and `hold-orgs` (the organizations whose holds a
 * heartbeat sweeps for expiry), each touched alone.
 *
 * Built once per gate; only the per-request names are made per call.
 */
export function gateKeys(prefix: string) {
  const org = (orgId: string) => `${prefix}{org:${orgId}}:`;
  return {
    /** The prefix of an organization's keys: the scripts that build names add to it. */
    org,
    rpm: (orgId: string, keyId: string) => `${org(orgId)}rpm:${keyId}`,
    conc: (orgId: string, keyId: string) => `${org(orgId)}conc:${keyId}`,
    tpm: (orgId: string, keyId: string) => `${org(orgId)}tpm:${keyId}`,
    month: (orgId: string, keyId: string, month: string) => `${org(orgId)}month:${keyId}:${month}`,
    wallet: (orgId: string) => `${org(orgId)}wallet`,
    held: (orgId: string) => `${org(orgId)}held`,
    unwritten: (orgId: string) => `${org(orgId)}unwritten`,
    btag: (orgId: string) => `${org(orgId)}btag`,
    holdExpiry: (orgId: string) => `${org(orgId)}hold-expiry`,
    /** A budget's count or limit (`budget:key:K:2026-11`, `blimit:key:K:month`: `budgets.ts`). */
    counter: (orgId: string, counter: string) => `${org(orgId)}${counter}`,
    /** In one slot (`{gate}`), so that a Redis Cluster shard losing one loses both. */
    holdOrgs: `${prefix}{gate}:hold-orgs`,
    epoch: `${prefix}{gate}:epoch`,
  };
}

export type GateKeys = ReturnType<typeof gateKeys>;

/**
 * A hold's member in `hold-expiry`: `O|request`, which the heartbeat splits at the bar to find the
 * hold when it expires.
 */
export function holdMember(orgId: string, requestId: string): string {
  return `${orgId}|${requestId}`;
}

/**
 * A connection's gate script calls sent and not yet answered: one count for every script defined on
 * it (`defineScript`), made with the gate that owns the connection (`RedisGate`).
 */
export interface AwaitedReplies {
  count: number;
}

/**
 * Defines a script as a command on the connection, once per connection:
 * ioredis then sends EVALSHA, not the script, on every call.
 *
 * Calls go through ioredis's auto-pipelining (`openRedis`), which gathers the
 * commands of one turn of the event loop into one write, a `setImmediate`
 * away. A call made `alone` (no other billed call under way on the replica:
 * at one connection, each request's admission and release) is written at once
 * instead, when nothing is queued for that write and no script of the gate
 * awaits its reply: nothing could share the write, so waiting for it would only
 * delay this one. The connection's order is kept: with nothing queued, the
 * write at once goes after every command called before it. ioredis reads
 * `enableAutoPipelining` on each call, so the call is made with it off; a
 * second definition of each script, left out of auto-pipelining, would have
 * doubled the cost of every `Pipeline`, which copies every script of the
 * connection onto itself (6.7 µs with the gate's eleven, 13 to 17 µs with
 * twice as many).
 */
export function defineScript(redis: RedisClient, script: ScriptSource, awaited: AwaitedReplies): Script {
  const commands = redis as unknown as Record<string, (...args: Array<string | number>) => Promise<unknown>>;
  const { name } = script;
  if (!commands[name]) redis.defineCommand(name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
  const counted = awaited;
  const answered = () => void counted.count--;
  const counting = (reply: Promise<unknown>) => {
    counted.count++;
    reply.then(answered, answered);
    return reply;
  };
  const call = (...args: Array<string | number>) => counting(commands[name]!(...args));
  const alone = (...args: Array<string | number>) => {
    const pipelining = redis.options.enableAutoPipelining;
    if (!pipelining || counted.count > 0 || redis.autoPipelineQueueSize > 0) return call(...args);
    redis.options.enableAutoPipelining = false;
    try {
      return call(...args);
    } finally {
      redis.options.enableAutoPipelining = pipelining;
    }
  };
  return Object.assign(call, { alone });
}
