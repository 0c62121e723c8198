import { Hono } from 'hono';
import { formatAmount } from '../../gateway/billing/money.js';
import { requireKey } from '../../gateway/requests/auth.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { V1Deps } from './deps.js';
import { chargesWritten } from '../fresh-charges.js';

/**
 * `GET /v1/wallet`: the balance of the key's own organization (never
 * another's: the organization is the key's, no parameter names one), so a
 * tool on the key (`tollgate code`) can show what is left.
 *
 * @example
 * v1.route('/wallet', walletRoutes(deps));
 */
export function walletRoutes(deps: V1Deps): Hono<GatewayEnv> {
  const wallet = new Hono<GatewayEnv>();
  wallet.get('/', requireKey(deps.keys), chargesWritten(deps.applier), async (c) => {
    const balance = await deps.wallets.balance(c.get('caller').orgId);
    return c.json({
      object: 'wallet',
      currency: deps.config.currency,
      balance: formatAmount(balance),
      balance_nanos: balance.toString(),
    });
  });
  return wallet;
}
