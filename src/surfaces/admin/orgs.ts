import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { readBody, readQuery } from '../../shared/http/validate.js';
import type { AdminDeps } from './deps.js';
import { projectView } from '../api/projects.js';
import { userView } from '../api/users.js';
import { keySettings } from './keys.js';
import * as body from './schemas.js';
import * as view from './views.js';
import { chargesWritten } from '../fresh-charges.js';

/**
 * Organizations for the operator (`/admin/v1/orgs`): create and list them,
 * and what each holds: projects, the wallet (top-ups, adjustments, the
 * ledger), keys and users made in it.
 *
 * @example
 * admin.route('/orgs', orgsRoutes(deps));
 */
export function orgsRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const orgs = new Hono<GatewayEnv>();
  const { wallets } = deps;
  const currency = deps.config.currency;
  // Balances and the ledger include this replica's charges journaled before the read.
  const fresh = chargesWritten(deps.applier);
  const orgWithBalance = async (orgId: string) =>
    view.orgView(await deps.orgs.get(orgId), await wallets.balance(orgId), currency);

  orgs.post('/', async (c) => {
    const { name } = await readBody(c, body.nameBody);
    return c.json(view.orgView(await deps.orgs.create(name), 0n, currency), 201);
  });
  orgs.get('/', fresh, async (c) => {
    const rows = await deps.orgs.listWithBalances();
    return c.json(view.listOf(rows.map(({ org, balance }) => view.orgView(org, balance, currency))));
  });
  orgs.get('/:orgId', fresh, async (c) => c.json(await orgWithBalance(c.req.param('orgId'))));
  orgs.patch('/:orgId', fresh, async (c) => {
    const { share_weight } = await readBody(c, body.orgUpdateBody);
    const org = await deps.orgs.setShareWeight(c.req.param('orgId'), share_weight);
    return c.json(view.orgView(org, await wallets.balance(org.id), currency));
  });

  orgs.post('/:orgId/projects', async (c) => {
    const { name } = await readBody(c, body.nameBody);
    return c.json(
      {
        object: 'project' as const,
        ...projectView(
          await deps.projects.create({
            orgId: (await deps.orgs.get(c.req.param('orgId'))).id,
            createdBy: null,
            name,
          }),
        ),
      },
      201,
    );
  });
  orgs.get('/:orgId/projects', async (c) => {
    const org = await deps.orgs.get(c.req.param('orgId'));
    return c.json(
      view.listOf(
        (await deps.projects.listInOrg(org.id)).map((project) => ({
          object: 'project' as const,
          ...projectView(project),
        })),
      ),
    );
  });

  addWalletRoutes(orgs, deps);
  addMemberRoutes(orgs, deps);
  return orgs;
}

/** An organization's wallet: top-ups, adjustments, and the balance with its ledger. */
function addWalletRoutes(orgs: Hono<GatewayEnv>, deps: AdminDeps): void {
  const { wallets } = deps;
  const currency = deps.config.currency;
  const wallet = async (orgId: string, limit = 50) => {
    const [balance, ledger] = await Promise.all([wallets.balance(orgId), wallets.ledger(orgId, limit)]);
    return view.walletView(orgId, currency, balance, ledger);
  };

  orgs.post('/:orgId/wallet/topups', async (c) => {
    const { amount, note } = await readBody(c, body.topupBody);
    await wallets.credit(c.req.param('orgId'), 'topup', amount, note);
    return c.json(await wallet(c.req.param('orgId')), 201);
  });
  orgs.post('/:orgId/wallet/adjustments', async (c) => {
    const { amount, note } = await readBody(c, body.adjustmentBody);
    await wallets.credit(c.req.param('orgId'), 'adjustment', amount, note);
    return c.json(await wallet(c.req.param('orgId')), 201);
  });
  orgs.get('/:orgId/wallet', chargesWritten(deps.applier), async (c) => {
    const { limit } = readQuery(c, body.ledgerQuery);
    return c.json(await wallet(c.req.param('orgId'), limit));
  });
}

/** Keys and users made in an organization. */
function addMemberRoutes(orgs: Hono<GatewayEnv>, deps: AdminDeps): void {
  const { keys } = deps;
  orgs.post('/:orgId/keys', async (c) => {
    const input = await readBody(c, body.createKeyBody);
    const orgId = c.req.param('orgId');
    // Every key acts as a person: the one named, or the organization's first owner.
    const userId = input.user_id ?? (await deps.users.firstOwner(orgId))?.id ?? null;
    const { key, secret } = await keys.create({
      ...keySettings(input),
      orgId,
      userId,
      name: input.name,
      expiry: input.expiry,
      projectId: input.project_id,
    });
    c.header('Cache-Control', 'no-store'); // the only response that carries a secret
    return c.json({ ...view.keyView(key), secret }, 201);
  });
  orgs.get('/:orgId/keys', async (c) => {
    const org = await deps.orgs.get(c.req.param('orgId'));
    const now = new Date();
    return c.json(view.listOf((await keys.list(org.id)).map((key) => view.keyView(key, now))));
  });
  orgs.post('/:orgId/users', async (c) => {
    const input = await readBody(c, body.operatorCreateUserBody);
    const user = await deps.users.create({
      orgId: c.req.param('orgId'),
      name: input.name,
      email: input.email,
      password: input.password,
      role: input.role ?? 'member',
      platformAdmin: input.platform_admin,
    });
    return c.json(userView(user), 201);
  });
}
