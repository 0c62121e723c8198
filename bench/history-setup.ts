import postgres from 'postgres';
import type { HistoryOrg, HistoryPlan } from './history-load.js';
import { PRICES } from './history-load.js';

/** The big organization's owner, who signs in to the portal. */
export const OWNER = { email: 'owner@history.bench', password: 'history-bench-password-1' };
const BIG_KEYS = 20;
const BIG_PROJECTS = 5;
const DAY_MS = 86_400_000;

/**
 * An operator API client: `call(method, path, body)` answers the parsed body, or throws naming the
 * status.
 */
export type AdminCall = (method: string, path: string, body?: unknown) => Promise<Record<string, unknown>>;

export function adminClient(base: string, token: string): AdminCall {
  return async (method, path, body) => {
    const response = await fetch(`${base}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} /admin/v1${path} answered ${response.status}: ${text}`);
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  };
}

/** The models the history names, with the prices the loader charged at. */
export async function addModels(call: AdminCall): Promise<void> {
  await call('POST', '/models', {
    id: 'sim-chat',
    display_name: 'Sim Chat',
    hf_repo_id: 'bench/sim-chat',
    task_type: 'chat',
    context_length: 8192,
  });
  await call('POST', '/models', {
    id: 'sim-embed',
    display_name: 'Sim Embed',
    hf_repo_id: 'bench/sim-embed',
    task_type: 'embedding',
    context_length: 512,
  });
  const perMillion = (nanos: number) => String(nanos / 1000);
  await call('PUT', '/prices/sim-chat', {
    input_per_million: perMillion(PRICES.chatInput),
    output_per_million: perMillion(PRICES.chatOutput),
  });
  await call('PUT', '/prices/sim-embed', { input_per_million: perMillion(PRICES.embedInput), output_per_million: '0' });
}

/**
 * The organizations of a history of `records` requests, made through the operator API: one big
 * organization (half the records, an owner, 5 projects and 20 keys, 4 of them on no project) and
 * `others` with a key each sharing the rest, over the `days` before now (a year by default).
 */
export async function makeOrganizations(
  call: AdminCall,
  records: number,
  others: number,
  days = 365,
): Promise<HistoryPlan> {
  const end = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000);
  const start = new Date(end.getTime() - days * DAY_MS);
  const big = await call('POST', '/orgs', { name: 'big history' });
  const bigId = big.id as string;
  await call('POST', `/orgs/${bigId}/users`, { name: 'Owner', ...OWNER, role: 'owner' });
  const projects: string[] = [];
  for (let p = 0; p < BIG_PROJECTS; p++)
    projects.push((await call('POST', `/orgs/${bigId}/projects`, { name: `project ${p}` })).id as string);
  const keys: HistoryOrg['keys'] = [];
  for (let k = 0; k < BIG_KEYS; k++) {
    const projectId = k % 5 === 4 ? null : projects[k % BIG_PROJECTS]!;
    const key = await call('POST', `/orgs/${bigId}/keys`, {
      name: `key ${k}`,
      ...(projectId ? { project_id: projectId } : {}),
    });
    keys.push({ id: key.id as string, projectId });
  }
  const bigRecords = Math.floor(records / 2);
  const orgs: HistoryOrg[] = [{ id: bigId, keys, records: bigRecords }];
  const each = Math.floor((records - bigRecords) / others);
  for (let o = 0; o < others; o++) {
    const org = await call('POST', '/orgs', { name: `history ${o}` });
    const key = await call('POST', `/orgs/${org.id as string}/keys`, { name: 'key' });
    const share = o === 0 ? records - bigRecords - each * (others - 1) : each;
    orgs.push({ id: org.id as string, keys: [{ id: key.id as string, projectId: null }], records: share });
  }
  return { start, end, orgs };
}

/**
 * The plan is kept in the bench's database, so a kept one (KEEP=1) is measured again without
 * loading.
 */
export async function savePlan(url: string, plan: HistoryPlan): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`create table bench_history_plan (plan jsonb not null)`;
    await sql`insert into bench_history_plan values (${JSON.stringify(plan)}::text::jsonb)`;
  } finally {
    await sql.end();
  }
}

/** The plan of a database a previous run loaded and kept, or null. */
export async function savedPlan(url: string): Promise<HistoryPlan | null> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [table] = await sql`select to_regclass('bench_history_plan') is not null as found`;
    if (!table?.found) return null;
    const [row] = await sql`select plan::text as plan from bench_history_plan`;
    if (!row) return null;
    const plan = JSON.parse(row.plan as string) as HistoryPlan & { start: string; end: string };
    return { ...plan, start: new Date(plan.start), end: new Date(plan.end) };
  } finally {
    await sql.end();
  }
}

/**
 * Creates the bench's database (`reuse`: keeps it when it is there) and answers whether it was
 * there.
 */
export async function createDatabase(serverUrl: string, name: string, reuse: boolean): Promise<boolean> {
  const sql = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    const [found] = await sql`select 1 from pg_database where datname = ${name}`;
    if (found && reuse) return true;
    if (found) await sql.unsafe(`drop database "${name}" with (force)`);
    await sql.unsafe(`create database "${name}"`);
    return false;
  } finally {
    await sql.end();
  }
}

export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const sql = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`drop database if exists "${name}" with (force)`);
  } finally {
    await sql.end();
  }
}
