import type { GateScript } from './redis-scripts.js';

/** The Redis gate's scripts for a wallet's rebuild and its top-ups (`redis-gate.ts`); the rest are in `redis-scripts.ts`. */

/**
 * Reads what a wallet's rebuild needs, together: its version, its holds and its unwritten charges.
 *
 * KEYS: wallet, held, unwritten. Returns {version, held pairs, unwritten pairs}.
 */
export const WALLET_STATE: GateScript = {
  name: 'tollgateWalletState',
  numberOfKeys: 3,
  lua: `
return {redis.call('HGET', KEYS[1], 'ver') or '0', redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3])}
`,
};

/**
 * Sets a rebuilt wallet's spendable amount: only into a wallet that has none,
 * unchanged since its state was read (else a hold or charge made meanwhile
 * would be counted wrong). Returns 1 when set, 0 otherwise.
 *
 * KEYS: wallet. ARGV: spendable, version.
 */
export const SET_WALLET: GateScript = {
  name: 'tollgateSetWallet',
  numberOfKeys: 1,
  lua: `
if redis.call('HEXISTS', KEYS[1], 'avail') == 1 then return 0 end
if (redis.call('HGET', KEYS[1], 'ver') or '0') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'avail', ARGV[1])
return 1
`,
};

/**
 * A top-up or adjustment: added to the spendable amount if the wallet has
 * one (else the rebuild reads it from PostgreSQL), and the version moved so
 * that a rebuild racing it is not kept.
 *
 * KEYS: wallet. ARGV: amount (signed).
 */
export const CREDIT: GateScript = {
  name: 'tollgateCredit',
  numberOfKeys: 1,
  lua: `
if redis.call('HEXISTS', KEYS[1], 'avail') == 1 then redis.call('HINCRBY', KEYS[1], 'avail', ARGV[1]) end
redis.call('HINCRBY', KEYS[1], 'ver', 1)
return 1
`,
};
