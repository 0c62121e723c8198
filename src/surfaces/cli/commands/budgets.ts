import type { budgetView } from '../../budgets.js';
import type { Args } from '../args.js';
import { segment } from '../client.js';
import { date, fields } from '../output.js';
import { type Command, STRING } from './command.js';

// `keys budget` and `projects budget`: a key's or a project's budget per month and per day, with
// what it spent so far; with --monthly or --daily, set first ("none" removes one). Amounts are
// decimal strings in the billing currency; the gateway checks them.
//
// @example
// tollgate projects budget prj_123 --monthly 250.00 --daily none

type BudgetView = ReturnType<typeof budgetView>;

/**
 * The flag's amount for the API: a decimal string, null for "none", undefined when the flag is
 * absent.
 */
function amountOf(a: Args, flag: string): string | null | undefined {
  const value = a.optional(flag);
  return value === 'none' ? null : value;
}

const describe = (b: BudgetView) =>
  fields([
    ['currency', b.currency],
    ['monthly budget', b.monthly ?? 'none'],
    ['spent this month', b.month.spent],
    ['month resets', date(b.month.resets_at)],
    ['daily budget', b.daily ?? 'none'],
    ['spent today', b.day.spent],
    ['day resets', date(b.day.resets_at)],
  ]);

function budgetCommand(scope: 'key' | 'project'): Command<BudgetView> {
  const group = scope === 'key' ? 'keys' : 'projects';
  return {
    name: `${group} budget`,
    args: 'ID [--monthly AMOUNT|none] [--daily AMOUNT|none]',
    summary: `Show a ${scope}'s budget and its spend this month and today; with a flag, set it first (owners' money limit, enforced at admission).`,
    options: { monthly: STRING, daily: STRING },
    positionals: 1,
    request: (a) => {
      const path = `/${group}/${segment(a.id(`${scope} ID`))}/budget`;
      const body = { monthly: amountOf(a, 'monthly'), daily: amountOf(a, 'daily') };
      if (body.monthly === undefined && body.daily === undefined) return { method: 'GET', path };
      return { method: 'PUT', path, body };
    },
    render: describe,
  };
}

export const budgetCommands = [budgetCommand('key'), budgetCommand('project')];
