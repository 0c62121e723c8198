import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { signIn } from '../api/harness.js';

const stores = await oneStore();

/**
 * Names a spreadsheet would run as formulas (none has a comma or quote, so a cell is the text
 * between commas).
 */
const FORMULAS = ['=HYPERLINK(0)', '+cmd|/C calc!A0', '-2+3', '@SUM(A1)'];

describe.each(stores)("the portal's usage CSV (%s)", (store) => {
  let gateway: TestGateway;
  let cookie: string;
  const requestIds = new Map<string, string>();

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10' });
    const { orgs, wallets, users, keys } = gateway.services;
    const org = await orgs.create('csv org');
    await wallets.credit(org.id, 'topup', 5_000_000_000n);
    const user = await users.create({
      orgId: org.id,
      name: 'Csv Owner',
      email: 'csv-owner@example.com',
      password: 'csv-owner-password',
      role: 'owner',
    });
    for (const name of FORMULAS) {
      const { secret } = await keys.create({ orgId: org.id, userId: user.id, name });
      const response = await fetch(`${gateway.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-chat', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(response.status).toBe(200);
      requestIds.set(name, response.headers.get('x-request-id')!);
    }
    ownerId = user.id;
    cookie = (await signIn(gateway, 'csv-owner@example.com', 'csv-owner-password')).cookie!;
  });
  afterAll(() => gateway?.close());
  let ownerId = '';

  it('writes a key named like a formula as text, as the costs CSV does: RFC 4180 lines, booleans spelled out', async () => {
    const response = await fetch(`${gateway.url}/portal/usage.csv?window=this-month`, { headers: { cookie } });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text.endsWith('\r\n')).toBe(true);
    const rows = text
      .trimEnd()
      .split('\r\n')
      .map((line) => line.split(','));
    const header = rows[0]!;
    for (const name of FORMULAS) {
      const row = rows.find((cells) => cells[header.indexOf('request_id')] === requestIds.get(name));
      expect(row, name).toBeDefined();
      expect(row![header.indexOf('key_name')]).toBe(`'${name}`);
      expect(row![header.indexOf('cache_hit')]).toBe('false');
    }
    // No cell of the file would start a formula.
    expect(rows.flat().filter((cell) => /^[=+\-@\t\r]/.test(cell))).toEqual([]);
  });

  it('keeps a key name with a line break in its one cell: a member cannot write a row, or a formula, of its own', async () => {
    // Before, a cell's bare line feed went out unquoted: a spreadsheet read a new row there,
    // starting with `=`.
    const name = 'report\n=cmd|/C calc!A0';
    const { orgs, keys } = gateway.services;
    const org = (await orgs.list()).find((o) => o.name === 'csv org')!;
    const { secret } = await keys.create({ orgId: org.id, userId: ownerId, name });
    const answer = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(answer.status).toBe(200);
    const requestId = answer.headers.get('x-request-id')!;
    const response = await fetch(`${gateway.url}/portal/usage.csv?window=this-month`, { headers: { cookie } });
    const rows = parseCsv(await response.text());
    const header = rows[0]!;
    expect(rows.every((cells) => cells.length === header.length)).toBe(true);
    const row = rows.find((cells) => cells[header.indexOf('request_id')] === requestId);
    expect(row![header.indexOf('key_name')]).toBe(name);
    expect(rows.flat().filter((cell) => /^[=+@\t\r]/.test(cell))).toEqual([]);
  });
});

/**
 * CSV read as a spreadsheet reads it (RFC 4180): a quoted cell may hold commas, quotes and line
 * breaks.
 */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  const endRow = () => {
    row.push(cell);
    rows.push(row);
    row = [];
    cell = '';
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted && ch === '"' && text[i + 1] === '"') {
      cell += '"';
      i++;
    } else if (quoted && ch === '"') quoted = false;
    else if (quoted) cell += ch;
    else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(cell);
      cell = '';
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      endRow();
    } else cell += ch;
  }
  if (cell || row.length) endRow();
  return rows;
}
