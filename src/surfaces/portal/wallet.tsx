import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { WalletPage } from './account-pages.js';
import type { PortalDeps } from './session.js';

/**
 * The wallet (`/portal/wallet`): the balance, what requests in flight hold, and the ledger.
 *
 * @example
 * portal.route('/wallet', walletRoutes(deps));
 */
export function walletRoutes(deps: PortalDeps): Hono<GatewayEnv> {
  const wallet = new Hono<GatewayEnv>();
  const { services } = deps;
  wallet.get('/', async (c) => {
    const actor = await deps.signedIn(c);
    await services.applier.settled(2_000);
    const [balance, ledger, state] = await Promise.all([services.wallets.balance(actor.orgId), services.wallets.ledger(actor.orgId, 100), services.admissions.gate.walletState(actor.orgId)]);
    const held = state.holds.reduce((sum, hold) => sum + hold.amount, 0n);
    return c.html(<WalletPage viewer={deps.viewerOf(actor)} balance={balance} held={held} ledger={ledger} currency={services.config.currency} />);
  });
  return wallet;
}
