import { and, eq, isNull } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { apiKeys, projects } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { type Budgets, BUDGETS_SET_TTL_MS } from '../admission/budgets.js';
import type { LimitGate } from '../admission/gate.js';
import { currentDayBounds, currentMonthBounds } from '../admission/month.js';
import { budgetSpend } from './budget-spend.js';

/**
 * A key's or a project's budgets, and what it spent in each window so far (its charges in the usage
 * records).
 */
export interface BudgetReport {
  /** The organization that owns the key or the project: the surfaces check the actor against it. */
  orgId: string;
  budgets: Budgets;
  month: { spent: bigint; resetsAt: Date };
  day: { spent: bigint; resetsAt: Date };
}

/**
 * Budgets per key and per project (`admission/budgets.ts`): read with their spend, and set. The
 * gate reads them from the request-path cache, which every change here drops (`onChange`, and
 * `catalog_version` for the other replicas, within TOLLGATE_CATALOG_POLL_MS); so that a change
 * binds every replica from its answer on, it is also written to the gate before it is answered
 * (`LimitGate.setBudgets`), which every admission reads in place of its replica's copy. Spend shown
 * here is the usage records': the charges written, not the holds in flight.
 *
 * @example
 * await budgets.set('key', 'key_1', { monthly: 10_000_000n, daily: null });
 */
export class BudgetService {
  constructor(
    private readonly db: Database,
    private readonly onChange: () => void = () => {},
    /**
     * The limits gate, told of each change before it is answered (none: a gate that reads only the
     * cache).
     */
    private readonly gate: Pick<LimitGate, 'setBudgets'> | null = null,
  ) {}

  /** A key's or a live project's budgets and spend; 404 when there is none. */
  async get(scope: 'key' | 'project', id: string): Promise<BudgetReport> {
    const [row] =
      scope === 'key'
        ? await this.db
            .select({ orgId: apiKeys.orgId, monthly: apiKeys.monthlyBudget, daily: apiKeys.dailyBudget })
            .from(apiKeys)
            .where(eq(apiKeys.id, id))
        : await this.db
            .select({ orgId: projects.orgId, monthly: projects.monthlyBudget, daily: projects.dailyBudget })
            .from(projects)
            .where(and(eq(projects.id, id), isNull(projects.deletedAt)));
    if (!row) throw new GatewayError('not_found', `The ${scope} ${id} does not exist.`);
    const month = currentMonthBounds();
    const day = currentDayBounds();
    const window = (bounds: { startsAt: number; endsAt: number }) => ({
      from: new Date(bounds.startsAt),
      to: new Date(bounds.endsAt),
    });
    const [monthSpend, daySpend] = await Promise.all([
      budgetSpend(this.db, scope, id, window(month), []),
      budgetSpend(this.db, scope, id, window(day), []),
    ]);
    return {
      orgId: row.orgId,
      budgets: { monthly: row.monthly, daily: row.daily },
      month: { spent: monthSpend.spent, resetsAt: new Date(month.endsAt) },
      day: { spent: daySpend.spent, resetsAt: new Date(day.endsAt) },
    };
  }

  /**
   * Sets a key's or a project's budgets (null: none; undefined: unchanged); the caller has checked
   * who may.
   */
  async set(scope: 'key' | 'project', id: string, budgets: Partial<Budgets>): Promise<BudgetReport> {
    const values = { monthlyBudget: budgets.monthly, dailyBudget: budgets.daily };
    const [updated] =
      scope === 'key'
        ? await this.db
            .update(apiKeys)
            .set(values)
            .where(eq(apiKeys.id, id))
            .returning({ orgId: apiKeys.orgId, monthly: apiKeys.monthlyBudget, daily: apiKeys.dailyBudget })
        : await this.db
            .update(projects)
            .set(values)
            .where(and(eq(projects.id, id), isNull(projects.deletedAt)))
            .returning({ orgId: projects.orgId, monthly: projects.monthlyBudget, daily: projects.dailyBudget });
    if (!updated) throw new GatewayError('not_found', `The ${scope} ${id} does not exist.`);
    this.onChange();
    const set = { monthly: updated.monthly, daily: updated.daily };
    await this.gate?.setBudgets(updated.orgId, scope, id, set, BUDGETS_SET_TTL_MS).catch((error: unknown) => {
      throw new GatewayError(
        'limits_unavailable',
        `The ${scope}'s budget is saved, but the gateway could not pass it to its limits store; send the change again.`,
        { headers: { 'Retry-After': '1' }, cause: error },
      );
    });
    return this.get(scope, id);
  }
}
