import { expect } from 'vitest';

/**
 * The ledger export as the operator API answers it (`GET
 * /admin/v1/orgs/{org}/wallet/ledger`, and its `.csv` twin), and what a
 * reconciler checks of it: each window chains from its opening balance to its
 * closing one, each charge names its usage record and each usage record its
 * charge, each other entry has its cause.
 */

export interface ExportedEntry {
  id: number;
  created_at: string;
  kind: string;
  amount_nanos: string;
  balance_after_nanos: string;
  request_id: string | null;
  note: string | null;
}

export interface ExportedUsage {
  request_id: string;
  created_at: string;
  endpoint: string;
  cost_nanos: string;
  status: number;
  ledger_entry_id: number | null;
}

export interface LedgerExport {
  opening_balance_nanos: string;
  closing_balance_nanos: string;
  entries: ExportedEntry[];
  usage: ExportedUsage[];
}

/**
 * One window of the ledger holds together: each entry's balance follows from
 * the opening balance, a charge is minus its usage record's cost and the
 * record names it back, a top-up or adjustment carries a note matching
 * `note`, and a record that cost nothing names no entry.
 */
export function expectWindowTies(x: LedgerExport, note: RegExp): void {
  let balance = BigInt(x.opening_balance_nanos);
  const usageOf = new Map(x.usage.map((u) => [u.request_id, u]));
  for (const entry of [...x.entries].sort((a, b) => a.id - b.id)) {
    balance += BigInt(entry.amount_nanos);
    expect(entry.balance_after_nanos, `entry ${entry.id}`).toBe(balance.toString());
    if (entry.kind === 'charge') {
      const usage = usageOf.get(entry.request_id!);
      expect(usage, `charge ${entry.id} names its usage record`).toBeDefined();
      expect(BigInt(entry.amount_nanos)).toBe(-BigInt(usage!.cost_nanos));
      expect(usage!.ledger_entry_id).toBe(entry.id);
    } else {
      expect(['topup', 'adjustment']).toContain(entry.kind);
      expect(entry.note).toMatch(note);
    }
  }
  expect(balance.toString()).toBe(x.closing_balance_nanos);
  const entryIds = new Set(x.entries.map((e) => e.id));
  for (const usage of x.usage)
    if (usage.cost_nanos === '0') expect(usage.ledger_entry_id, usage.request_id).toBeNull();
    else expect(entryIds.has(usage.ledger_entry_id!), `${usage.request_id} names its entry`).toBe(true);
}

/**
 * Consecutive windows: the first opens at 0, each opens where the one before closed, and each ties
 * (`expectWindowTies`).
 */
export function expectWindowsChain(windows: LedgerExport[], note: RegExp): void {
  expect(windows[0]!.opening_balance_nanos).toBe('0');
  for (let i = 1; i < windows.length; i++)
    expect(windows[i]!.opening_balance_nanos, `window ${i}`).toBe(windows[i - 1]!.closing_balance_nanos);
  for (const window of windows) expectWindowTies(window, note);
}

/**
 * The CSV of a window says what its JSON says: one row per entry (a charge
 * with its usage record's cost and model beside it), then one per record
 * that cost nothing. Cells hold no commas here (notes are the test's own).
 */
export function expectCsvMatches(csv: string, x: LedgerExport, model: string, note: RegExp): void {
  const [header, ...lines] = csv.trim().split('\r\n');
  const columns = header!.split(',');
  const rows = lines.map((line) => Object.fromEntries(line.split(',').map((cell, i) => [columns[i], cell])));
  const free = x.usage.filter((u) => u.ledger_entry_id === null);
  expect(rows).toHaveLength(x.entries.length + free.length);
  for (const row of rows) {
    if (row.kind === 'charge') {
      expect(row.cost_nanos).toBe((-BigInt(row.amount_nanos)).toString());
      expect(row.model).toBe(model);
    } else if (row.kind) expect(row.note).toMatch(note);
    else expect([row.ledger_entry_id, row.cost_nanos]).toEqual(['', '0']);
  }
  expect(rows.filter((r) => r.kind === 'charge').map((r) => r.request_id)).toEqual(
    x.entries.filter((e) => e.kind === 'charge').map((e) => e.request_id),
  );
}
