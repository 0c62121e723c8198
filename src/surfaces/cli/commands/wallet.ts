import { parseAmount } from '../../../gateway/billing/money.js';
import { UsageError } from '../errors.js';
import { segment } from '../client.js';
import { date, table } from '../output.js';
import type { progressView, verificationView } from '../../admin/wallet-verify.js';
import { BOOLEAN, type Command, STRING, type WalletView } from './command.js';

// `wallet topup|adjust|show|verify`. Amounts are checked with the API's own parser
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

type Verification = ReturnType<typeof verificationView>;

const differenceLines = (v: Verification) =>
  v.differences.map(
    (d) =>
      `  ${d.kind}: entry ${d.ledger_entry_id ?? '-'}, request ${d.request_id ?? '-'}: expected ${d.expected_nanos}, found ${d.found_nanos} nano-units. ${d.message}`,
  );

type Progress = ReturnType<typeof progressView>;

const agreed = (v: Verification) => {
  const usage = `${v.usage_records} usage records${v.mode === 'incremental' ? ' since then' : ''}, each charged exactly once.`;
  if (v.mode === 'full' || !v.checkpoint)
    return `The books of ${v.org_id} agree: balance ${v.balance_nanos} nano-units = the sum of ${v.ledger_entries} ledger entries; ${usage}`;
  const since = `entry ${v.checkpoint.last_entry_id}, verified ${date(v.checkpoint.made_at)}`;
  return `The books of ${v.org_id} agree: balance ${v.balance_nanos} nano-units = the sum of ${v.ledger_entries} ledger entries, ${v.entries_read} of them new since the checkpoint at ${since}; ${usage} (--full reads them all.)`;
};

const verify: Command<Verification> = {
  name: 'wallet verify',
  args: '--org ID [--full]',
  summary:
    'Check the ledger written since the last verified point (--full: all of it) against the balance and the usage records; exit 1 naming each difference.',
  options: { org: STRING, full: BOOLEAN },
  request: (a) => ({
    method: 'GET',
    path: `/orgs/${segment(a.id('org', 'org'))}/wallet/verify${a.flag('full') ? '?full=true' : ''}`,
  }),
  progress: (event) => {
    const p = event as Progress;
    const what = p.phase === 'ledger' ? 'ledger entries' : 'usage records';
    return `verifying: ${p.read} ${what} read (${Math.floor(p.fraction * 100)}%)`;
  },
  // Books that differ are a failure (exit 1), so a script can run it; `--json` prints the report
  // too.
  failure: (v) =>
    v.ok
      ? null
      : [`the books of ${v.org_id} differ in ${v.difference_count} place(s):`, ...differenceLines(v)].join('\n'),
  render: agreed,
};

export const walletCommands = [topup, adjust, show, verify];
