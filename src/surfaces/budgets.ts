import { z } from 'zod';
import { formatAmount, MoneyFormatError, parseAmount } from '../gateway/billing/money.js';
import type { Budgets } from '../gateway/admission/budgets.js';
import type { BudgetReport } from '../gateway/billing/budgets.js';
import { MAX_BUDGET_NANOS } from '../gateway/billing/budget-rule.js';

/**
 * A budget: a decimal string in the billing currency (`"25.00"`), or null for none. Never a JSON
 * number.
 */
export const budgetAmount = z
  .string({
    error: (issue) =>
      typeof issue.input === 'number'
        ? 'Send budgets as decimal strings such as "25.00", not JSON numbers.'
        : undefined,
  })
  .transform((text, ctx) => {
    try {
      const nanos = parseAmount(text);
      if (nanos >= 0n && nanos <= MAX_BUDGET_NANOS) return nanos;
      ctx.addIssue({ code: 'custom', message: 'A budget is from 0 to 1,000,000,000 units of the billing currency.' });
    } catch (error) {
      if (!(error instanceof MoneyFormatError)) throw error;
      ctx.addIssue({ code: 'custom', message: error.message });
    }
    return z.NEVER;
  })
  .nullable();

/**
 * `PUT …/budget`: the monthly and the daily budget; null removes one, a field left out stays as it
 * is.
 */
export const budgetBody = z
  .strictObject({ monthly: budgetAmount.optional(), daily: budgetAmount.optional() })
  .refine((body) => body.monthly !== undefined || body.daily !== undefined, {
    message: 'Send monthly, daily or both (an amount such as "25.00", or null for none).',
    path: ['body'],
  });

export function budgetsOf(body: z.output<typeof budgetBody>): Partial<Budgets> {
  return { monthly: body.monthly, daily: body.daily };
}

/** A budget as every surface's JSON shows it: amounts as decimal strings in the billing currency. */
export function budgetView(report: BudgetReport, currency: string) {
  const amount = (nanos: bigint | null) => (nanos === null ? null : formatAmount(nanos));
  return {
    object: 'budget' as const,
    currency,
    monthly: amount(report.budgets.monthly),
    daily: amount(report.budgets.daily),
    month: { spent: formatAmount(report.month.spent), resets_at: report.month.resetsAt.toISOString() },
    day: { spent: formatAmount(report.day.spent), resets_at: report.day.resetsAt.toISOString() },
  };
}
