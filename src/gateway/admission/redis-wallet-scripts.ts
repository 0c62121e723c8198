import { gateScript } from './redis-script.js';

/**
 * The Redis gate's scripts for a wallet's rebuild and its top-ups (`redis-gate.ts`); the rest are
 * in `redis-scripts.ts`.
 */

/**
 * Reads what a wallet's rebuild needs, together: its version, its holds and its unwritten charges.
 * Returns {version, held pairs, unwritten pairs}.
 */
export const WALLET_STATE = gateScript({
  name: 'tollgateWalletState',
  keys: ['wallet', 'held', 'unwritten'],
  args: [],
  body: `
return {redis.call('HGET', KEY.wallet, 'ver') or '0', redis.call('HGETALL', KEY.held), redis.call('HGETALL', KEY.unwritten)}
`,
});

/**
 * Sets a rebuilt wallet's spendable amount: only into a wallet that has none,
 * unchanged since its state was read (else a hold or charge made meanwhile
 * would be counted wrong). Returns 1 when set, 0 otherwise.
 */
export const SET_WALLET = gateScript({
  name: 'tollgateSetWallet',
  keys: ['wallet'],
  args: ['spendable', 'version'],
  body: `
if redis.call('HEXISTS', KEY.wallet, 'avail') == 1 then return 0 end
if (redis.call('HGET', KEY.wallet, 'ver') or '0') ~= ARG.version then return 0 end
redis.call('HSET', KEY.wallet, 'avail', ARG.spendable)
return 1
`,
});

/**
 * A top-up or adjustment (`amount`, signed): added to the spendable amount if the wallet has
 * one (else the rebuild reads it from PostgreSQL), and the version moved so
 * that a rebuild racing it is not kept.
 */
export const CREDIT = gateScript({
  name: 'tollgateCredit',
  keys: ['wallet'],
  args: ['amount'],
  body: `
if redis.call('HEXISTS', KEY.wallet, 'avail') == 1 then redis.call('HINCRBY', KEY.wallet, 'avail', ARG.amount) end
redis.call('HINCRBY', KEY.wallet, 'ver', 1)
return 1
`,
});
