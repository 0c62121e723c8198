import type { MiddlewareHandler } from 'hono';
import type { ChargeApplier } from '../gateway/billing/charge-applier.js';
import type { GatewayEnv } from '../shared/http/context.js';
import { STORE_TIMEOUT_MS } from '../shared/db/timeout.js';

/**
 * Read your writes, declared on the route that reads charges (usage, a
 * balance, the ledger), in every surface the same way:
 * `wallet.get('/', chargesWritten(deps.applier), handler)`. The read
 * includes every charge this replica had journaled when it came: it waits, at
 * most STORE_TIMEOUT_MS, for those charges to reach the database
 * (`ChargeApplier.written`), and goes on either way.
 */
export function chargesWritten(applier: Pick<ChargeApplier, 'written'>): MiddlewareHandler<GatewayEnv> {
  return async function chargesWritten(_c, next) {
    await applier.written(STORE_TIMEOUT_MS);
    await next();
  };
}
