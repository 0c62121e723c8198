import { type CalendarWindow, currentDayBounds, currentMonth } from './month.js';

/**
 * Budgets: money a key or a project may spend per calendar month and per day (UTC), in nano-units
 * of the organization's billing currency. The gate keeps each window's spend (charges plus the
 * holds of requests in flight) as a count of its own, and admits a request only if its hold fits in
 * what is left of every budget it falls under, together with the wallet's hold, in one step
 * (`gate.ts`).
 *
 * Every billed request is tagged with the four counts it may fall under (its key's and its
 * project's month and day), each marked as held on or not: its release moves every count that
 * exists (the hold back where it was taken, the charge out everywhere), so a count stays exact
 * whether or not a budget is set, and a count rebuilt from the usage records (`rebuild.ts`) finds
 * the holds and the unwritten charges it must add.
 */

export type BudgetScope = 'key' | 'project';

/**
 * How long the gate keeps a budget as set (`LimitGate.setBudgets`), read in place of what the
 * replicas' request-path caches hold: far longer than any cache takes to read a change
 * (`TOLLGATE_CATALOG_POLL_MS`, at most a minute, plus one read).
 */
export const BUDGETS_SET_TTL_MS = 600_000;
/**
 * A budget count not yet rebuilt is kept this long for its version only: far longer than a rebuild
 * takes.
 */
export const VERSION_TTL_MS = 3_600_000;
export type BudgetWindow = 'month' | 'day';

/** A key's or a project's budgets, as stored; null: none. */
export interface Budgets {
  monthly: bigint | null;
  daily: bigint | null;
}

/** One budget window a request falls under, and the limit this replica knows for it. */
export interface BudgetLimit {
  /**
   * The gate's name for this budget's window: `budget:key:K:2026-11`,
   * `budget:project:P:2026-11-26`.
   */
  counter: string;
  scope: BudgetScope;
  /** The key's or the project's id. */
  subjectId: string;
  window: BudgetWindow;
  /**
   * The limit as this replica's request-path cache read it; null: none. The gate reads a limit set
   * since (`LimitGate.setBudgets`) in its place, in the admission's one step: a change binds from
   * its answer on.
   */
  limitNanos: bigint | null;
  /** The gate's name for this budget's limit as last set (`budgetLimitName`). */
  limitName: string;
  /** When the window began and when it ends (ms, UTC). */
  startsAt: number;
  endsAt: number;
}

/**
 * A budget's count, named in a request's tag: held on (the request's hold was taken from it) or
 * only charged.
 */
export interface TaggedCounter {
  counter: string;
  held: boolean;
}

export function budgetCounter(scope: BudgetScope, subjectId: string, windowName: string): string {
  return `budget:${scope}:${subjectId}:${windowName}`;
}

/** The gate's name for a budget's limit as last set: `blimit:key:K:month`. */
export function budgetLimitName(scope: BudgetScope, subjectId: string, window: BudgetWindow): string {
  return `blimit:${scope}:${subjectId}:${window}`;
}

/**
 * The budget windows a request falls under now, in its tag's order (`budgetTag`): its key's month
 * and day, and its project's, each with the limit this replica knows (null: none). The gate checks
 * those with a limit, or with one set since.
 */
export function budgetLimits(
  key: { id: string; budgets: Budgets },
  project: { id: string; budgets: Budgets } | null,
  month: CalendarWindow,
  day: CalendarWindow,
): BudgetLimit[] {
  const limits: BudgetLimit[] = [];
  for (const [scope, subject] of [
    ['key', key],
    ['project', project],
  ] as const) {
    if (!subject) continue;
    limits.push(limitOf(scope, subject.id, 'month', subject.budgets.monthly, month));
    limits.push(limitOf(scope, subject.id, 'day', subject.budgets.daily, day));
  }
  return limits;
}

function limitOf(
  scope: BudgetScope,
  subjectId: string,
  window: BudgetWindow,
  limitNanos: bigint | null,
  bounds: CalendarWindow,
): BudgetLimit {
  const counter = budgetCounter(scope, subjectId, bounds.name);
  const limitName = budgetLimitName(scope, subjectId, window);
  return { counter, scope, subjectId, window, limitNanos, limitName, startsAt: bounds.startsAt, endsAt: bounds.endsAt };
}

/**
 * A request's tag from the windows it falls under (`budgetLimits`, in order) and which of them its
 * hold was taken from: `~` before the others.
 */
export function heldTag(budgets: BudgetLimit[], held: (index: number) => boolean): string {
  let tag = '';
  for (let index = 0; index < budgets.length; index++)
    tag += (index === 0 ? '' : ' ') + (held(index) ? '' : '~') + budgets[index]!.counter;
  return tag;
}

/**
 * A request's tag: the four counts it falls under, space-separated, each after `~` when its hold
 * was not taken from it (no budget set there when it was admitted). `at` (ms) is when it was
 * admitted; a charge reported again after a Redis loss is tagged from its own time, all `~`.
 */
export function budgetTag(keyId: string, projectId: string | null, held: BudgetLimit[], at?: number): string {
  const month = at === undefined ? currentMonth() : new Date(at).toISOString().slice(0, 7);
  const today = at === undefined ? currentDayBounds().name : new Date(at).toISOString().slice(0, 10);
  const names = [budgetCounter('key', keyId, month), budgetCounter('key', keyId, today)];
  if (projectId !== null)
    names.push(budgetCounter('project', projectId, month), budgetCounter('project', projectId, today));
  let tag = '';
  for (const name of names) {
    const isHeld = held.some((limit) => limit.counter === name);
    tag += (tag === '' ? '' : ' ') + (isHeld ? name : `~${name}`);
  }
  return tag;
}

/** A tag read back. */
export function parseTag(tag: string): TaggedCounter[] {
  if (tag === '') return [];
  return tag
    .split(' ')
    .map((name) => (name.startsWith('~') ? { counter: name.slice(1), held: false } : { counter: name, held: true }));
}
