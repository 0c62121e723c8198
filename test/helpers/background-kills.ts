import type postgres from 'postgres';
import { expect } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import { billedReplicas, type BilledReplicas } from './billed-replicas.js';
import type { GatewayProcess } from './processes.js';
import { redisHolds } from './services.js';
import { until } from './wait.js';

type Json = Record<string, unknown>;

/**
 * What the tests of background responses whose replica is SIGKILLed share
 * (`test/gateway/background-responses-sigkill*.test.ts`): the simulator and billing replicas with
 * short leases and checkpoints, an organization with credit and a key, a streamed response left
 * by its client, the jobs' rows and the books.
 *
 * @example
 * const { sim, fleet } = await killableFleet(ADMIN_TOKEN, { max_num_seqs: 2 });
 * const { orgId, call } = await fundedKey(fleet, one, 'acme');
 */

/** The simulator's time between two tokens: a token every 20 ms. */
export const ITL_MS = 20;
/** Tokens of an answer when none is asked (the simulator's default): 8 s, cut by a kill. */
export const LONG = 400;
/** What `fundedKey` tops the organization's wallet up with: 100.00. */
export const CREDIT = 100_000_000_000n;

/** A call of `/v1` by the key: POST with a body, GET without. */
export type V1Call = (gateway: GatewayProcess, path: string, body?: Json) => Promise<Response>;

/** A job's row as the tests read it. */
export interface JobRow {
  id: string;
  status: string;
  reached_engine: boolean;
  claimed_by: string;
  generated_tokens: number;
}

/**
 * The simulator (`sim-chat`, a token every ITL_MS, LONG tokens by default) and billing replicas on
 * it whose background leases last 1.5 s, whose streams checkpoint every 20 tokens and whose holds
 * last 2 s: a dead replica's jobs are taken over, and its holds given back, within seconds.
 */
export async function killableFleet(
  adminToken: string,
  engine: Record<string, unknown>,
): Promise<{ sim: RunningSimulator; fleet: BilledReplicas }> {
  const sim = await startSimulator({
    models: [{ name: 'sim-chat', task: 'chat', maxModelLen: 16_384 }],
    itlMs: ITL_MS,
    defaultMaxTokens: LONG,
  });
  try {
    const fleet = await billedReplicas({
      adminToken,
      simUrl: sim.url,
      engine: { urls: [sim.url], ...engine },
      env: {
        TOLLGATE_RESPONSES_BACKGROUND_LEASE_MS: '1500',
        TOLLGATE_STREAM_CHECKPOINT_TOKENS: '20',
        TOLLGATE_HOLD_LEASE_MS: '2000',
      },
    });
    return { sim, fleet };
  } catch (error) {
    await sim.close().catch(() => {});
    throw error;
  }
}

/**
 * An organization with CREDIT in its wallet and a key whose limits refuse none of the test's many
 * reads, made through `gateway`; `call` calls `/v1` with the key.
 */
export async function fundedKey(
  fleet: BilledReplicas,
  gateway: GatewayProcess,
  name: string,
): Promise<{ orgId: string; secret: string; call: V1Call }> {
  const org = await fleet.admin<{ id: string }>(gateway, 'POST', '/orgs', { name });
  await fleet.admin(gateway, 'POST', `/orgs/${org.id}/wallet/topups`, { amount: (CREDIT / 1_000_000_000n).toString() });
  const key = await fleet.admin<{ secret: string }>(gateway, 'POST', `/orgs/${org.id}/keys`, {
    name: 'agent',
    requests_per_minute: 1_000_000,
    max_concurrency: 100,
  });
  const call: V1Call = (target, path, body) =>
    fetch(`${target.url}/v1${path}`, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
      body: body && JSON.stringify(body),
    });
  return { orgId: org.id, secret: key.secret, call };
}

/**
 * Makes a streamed background response and leaves it once `events` events are read: its id, its
 * request id, the `sequence_number`s and the text its client read.
 */
export async function leftStream(
  call: V1Call,
  gateway: GatewayProcess,
  body: Json,
  events = 10,
): Promise<{ id: string; requestId: string; seen: number[]; text: string }> {
  const answer = await call(gateway, '/responses', { model: 'sim-chat', background: true, stream: true, ...body });
  expect(answer.status).toBe(200);
  const reader = answer.body!.getReader();
  let text = '';
  while (sequencesOf(text).length < events) text += new TextDecoder().decode((await reader.read()).value);
  await reader.cancel();
  const id = /"id":"(resp_[0-9a-f]+)"/.exec(text)![1]!;
  return { id, requestId: answer.headers.get('x-request-id')!, seen: sequencesOf(text), text };
}

/** The jobs' rows, read directly. */
export function jobRows(sql: postgres.Sql, ids: string[]): Promise<JobRow[]> {
  return sql<JobRow[]>`
    select id, status, reached_engine, claimed_by, generated_tokens from background_responses
    where id in ${sql(ids)}`;
}

/** A usage record as the books are checked. */
export interface UsageRow {
  id: string;
  prompt_tokens: number;
  completion_tokens: number;
  cost_nanos: string;
  status: number;
}

/**
 * The organization's books are whole: one usage record and one charge for each of `requestIds`
 * and no other, the wallet CREDIT less their sum, and no hold left in the gate. Its usage records.
 */
export async function expectBooksWhole(
  fleet: BilledReplicas,
  orgId: string,
  requestIds: string[],
): Promise<UsageRow[]> {
  const { sql } = fleet;
  const records = await sql<UsageRow[]>`
    select id, prompt_tokens, completion_tokens, cost_nanos::text, status from usage_records where org_id = ${orgId}`;
  expect(records.map((r) => r.id).sort()).toEqual([...requestIds].sort());
  const charges = await sql<Array<{ request_id: string; amount: string }>>`
    select request_id, amount_nanos::text as amount from ledger_entries where org_id = ${orgId} and kind = 'charge'`;
  expect(charges.map((c) => c.request_id).sort()).toEqual([...requestIds].sort());
  const spent = records.reduce((sum, r) => sum + BigInt(r.cost_nanos), 0n);
  expect(charges.reduce((sum, c) => sum - BigInt(c.amount), 0n)).toBe(spent);
  const [wallet] = await sql<Array<{ balance: string }>>`
    select balance_nanos::text as balance from wallets where org_id = ${orgId}`;
  expect(BigInt(wallet!.balance)).toBe(CREDIT - spent);
  await until('no hold is left', async () => (await redisHolds(fleet.prefix, orgId)) === 0, {
    timeout: 15_000,
    interval: 200,
  });
  return records;
}

/** The `sequence_number`s of a Responses stream's whole events, in order. */
export function sequencesOf(text: string): number[] {
  const whole = text.slice(0, text.lastIndexOf('\n\n') + 2);
  return [...whole.matchAll(/^data: \{"type":"[^"]+","sequence_number":(\d+)/gm)].map((match) => Number(match[1]));
}
