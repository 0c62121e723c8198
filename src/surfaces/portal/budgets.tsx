import { Hono } from 'hono';
import { z } from 'zod';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { canSeeProject, canSetBudget } from '../../platform/people/permissions.js';
import { budgetAmount } from '../budgets.js';
import { chargesWritten } from '../fresh-charges.js';
import { BudgetPage, type BudgetSubject } from './budgets-pages.js';
import type { PortalDeps } from './deps.js';
import { type PortalSession, problems } from './session.js';

/** An empty field is no budget. */
const field = z.preprocess((value) => (value === '' || value === undefined ? null : value), budgetAmount);
const budgetForm = z.object({ monthly: field, daily: field });

/**
 * Budgets (`/portal/budgets/key/{id}`, `/portal/budgets/project/{id}`): a key's or a project's
 * budget per month and per day, with its spend; whoever sees the key or the project sees it, the
 * organization's owners set it.
 *
 * @example
 * portal.route('/budgets', budgetsRoutes(deps, session));
 */
export function budgetsRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const budgets = new Hono<GatewayEnv>();
  const currency = deps.config.currency;

  budgets.get('/:scope/:id', chargesWritten(deps.applier), async (c) => {
    const actor = await session.signedIn(c);
    const subject = await visibleSubject(deps, actor, c.req.param('scope'), c.req.param('id'));
    const report = await deps.budgets.get(subject.scope, subject.id);
    const canSet = canSetBudget(actor, report.orgId);
    const notice = c.req.query('done') === 'saved' ? 'Saved: the budget applies from the next request.' : undefined;
    return c.html(<BudgetPage viewer={session.viewerOf(actor)} {...{ subject, report, currency, canSet, notice }} />);
  });

  budgets.post('/:scope/:id', async (c) => {
    const actor = await session.signedIn(c);
    const subject = await visibleSubject(deps, actor, c.req.param('scope'), c.req.param('id'));
    const form = await c.req.parseBody();
    session.checkToken(actor, form._csrf);
    const report = await deps.budgets.get(subject.scope, subject.id);
    if (!canSetBudget(actor, report.orgId))
      throw new GatewayError('forbidden', "Only the organization's owners set budgets.");
    const parsed = budgetForm.safeParse(form);
    if (!parsed.success) {
      const page = { subject, report, currency, canSet: true, error: problems(parsed.error) };
      return c.html(<BudgetPage viewer={session.viewerOf(actor)} {...page} />, 400);
    }
    await deps.budgets.set(subject.scope, subject.id, parsed.data);
    return c.redirect(`/portal/budgets/${subject.scope}/${subject.id}?done=saved`, 303);
  });
  return budgets;
}

/**
 * The key (one of the actor's, as on the keys page) or the project (one the actor sees); 404
 * otherwise.
 */
async function visibleSubject(
  deps: Pick<PortalDeps, 'keys' | 'projects'>,
  actor: SignedInActor,
  scope: string,
  id: string,
): Promise<BudgetSubject> {
  if (scope === 'key') {
    const keys = await deps.keys.list(actor.orgId);
    const key = keys.find((k) => k.id === id && (actor.role !== 'member' || k.userId === actor.userId));
    if (!key) throw new GatewayError('not_found', 'There is no such key among yours.');
    return { scope, id, name: key.name, back: `/portal/keys/${id}/edit` };
  }
  if (scope === 'project') {
    // No such project is a 404; a store that failed stays an error of its own, not a page saying
    // there is none.
    const project = await deps.projects.get(id).catch((error: unknown) => {
      if (error instanceof GatewayError && error.code === 'not_found') return null;
      throw error;
    });
    if (!project || !canSeeProject(actor, project)) throw new GatewayError('not_found', 'There is no such project.');
    return { scope, id, name: project.name, back: '/portal/projects' };
  }
  throw new GatewayError('not_found', 'There is no such page.');
}
