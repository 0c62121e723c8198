import { parseAmount } from '../../../gateway/billing/money.js';
import { UsageError } from '../errors.js';
import { segment } from '../client.js';
import { date, table } from '../output.js';
import { type Command, STRING, type WalletView } from './command.js';

// `wallet topup|adjust|show`. Amounts are checked with the API's own parser
// and sent as the decimal strings typed, never as numbers.
//
// @example
// tollgate wallet topup --org org_123 --amount 12.50 --note "invoice 7"

function amount(sign: 'positive' | 'nonzero') {
  return (text: string) => {
    const nanos = parseAmount(text);
    if (sign === 'positive' && nanos <= 0n)
      throw new UsageError('--amount must be greater than 0 (use wallet adjust to take money out)');
    if (nanos === 0n) throw new UsageError('--amount cannot be 0');
  };
}

const balanceLine = (w: WalletView) => `Balance of ${w.org_id}: ${w.balance} ${w.currency}`;

const topup: Command<WalletView> = {
  name: 'wallet topup',
  args: '--org ID --amount 12.50 [--note T]',
  summary: "Add money to an organization's wallet.",
  options: { org: STRING, amount: STRING, note: STRING },
  request: (a) => ({
    method: 'POST',
    path: `/orgs/${segment(a.id('org', 'org'))}/wallet/topups`,
    body: { amount: a.money('amount', amount('positive')), note: a.optional('note') },
  }),
  render: balanceLine,
};

const adjust: Command<WalletView> = {
  name: 'wallet adjust',
  args: '--org ID --amount -1.00 --note T',
  summary: 'Correct a balance by a signed amount, with a reason.',
  options: { org: STRING, amount: STRING, note: STRING },
  request: (a) => ({
    method: 'POST',
    path: `/orgs/${segment(a.id('org', 'org'))}/wallet/adjustments`,
    body: { amount: a.money('amount', amount('nonzero')), note: a.required('note') },
  }),
  render: balanceLine,
};

const show: Command<WalletView> = {
  name: 'wallet show',
  args: '--org ID [--limit N]',
  summary: 'Show the balance and the latest ledger entries, newest first.',
  options: { org: STRING, limit: STRING },
  request: (a) => {
    const limit = a.int('limit', 1, 500);
    const query = limit === undefined ? '' : `?limit=${limit}`;
    return { method: 'GET', path: `/orgs/${segment(a.id('org', 'org'))}/wallet${query}` };
  },
  render: (w) =>
    `${balanceLine(w)}\n\n${table([['DATE', 'KIND', 'AMOUNT', 'BALANCE', 'NOTE'], ...w.ledger.map((e) => [date(e.created_at), e.kind, e.amount, e.balance_after, e.note ?? e.request_id ?? ''])])}`,
};

export const walletCommands = [topup, adjust, show];
