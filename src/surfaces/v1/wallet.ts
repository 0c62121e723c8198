import { Hono } from 'hono';
import { formatAmount } from '../../gateway/billing/money.js';
import { requireKey } from '../../gateway/requests/auth.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { Services } from '../../services.js';
import { chargesWritten } from '../fresh-charges.js';

/**
 * `GET /v1/wallet`: the balance of the key's own organization (never
 * another's: the organization is the key's, no parameter names one), so a
 * tool on the key (`tollgate code`) can show what is left.
 *
 * @example
 * v1.route('/wallet', walletRoutes(services));
 */
export function walletRoutes(services: Services): Hono<GatewayEnv> {
  const wallet = new Hono<GatewayEnv>();
  wallet.get('/', requireKey(services.keys), chargesWritten(services.applier), async (c) => {
    const balance = await services.wallets.balance(c.get('caller').orgId);
    return c.json({
      object: 'wallet',
      currency: services.config.currency,
      balance: formatAmount(balance),
      balance_nanos: balance.toString(),
    });
  });
  return wallet;
}
