import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerEntries, usageRecords, wallets } from '../../src/shared/db/schema.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { until } from '../helpers/wait.js';

type Json = Record<string, unknown>;

/** Tokens of every answer, one every ITL_MS: an answer takes about 300 ms. */
const ANSWER_TOKENS = 60;
const ITL_MS = 5;
const CREDIT = 50_000_000_000n; // 50.00

/**
 * A cancel racing a background response's end: whenever it lands, the response ends exactly one
 * of completed or cancelled, and everything that tells of it agrees (GET, the cancel's answer, the
 * kept events, the usage record's status); it is billed once and its hold given back once.
 */
describe('a cancel racing a background response to its end', () => {
  let sim: RunningSimulator;
  let gateway: TestGateway;
  let tenant: { orgId: string; secret: string };

  beforeAll(async () => {
    sim = await startSimulator({
      models: [{ name: 'sim-chat', task: 'chat' }],
      itlMs: ITL_MS,
      defaultMaxTokens: ANSWER_TOKENS,
    });
    gateway = await startTestGateway('pglite', {}, { engines: { 'sim-chat': sim.url } });
    tenant = await gateway.tenant({ credit: '50.00', key: { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 } });
  });
  afterAll(async () => {
    await gateway?.close();
    await sim?.close();
  });

  const call = (path: string, body?: Json) =>
    fetch(`${gateway.baseURL}${path}`, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${tenant.secret}`, 'content-type': 'application/json' },
      body: body && JSON.stringify(body),
    });

  /** A streamed background response queued; its client leaves after the first event. */
  async function queued(): Promise<{ id: string; requestId: string }> {
    const answer = await call('/responses', { model: 'sim-chat', input: 'Write.', background: true, stream: true });
    expect(answer.status).toBe(200);
    const reader = answer.body!.getReader();
    let text = '';
    while (!/"id":"resp_/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    return { id: /"id":"(resp_[0-9a-f]+)"/.exec(text)![1]!, requestId: answer.headers.get('x-request-id')! };
  }

  /** How it ended, as each witness tells it, once it has. */
  async function told(id: string, requestId: string) {
    const read = await until(
      `${id} has ended`,
      async () => {
        const got = (await (await call(`/responses/${id}`)).json()) as Json;
        return got.status !== 'queued' && got.status !== 'in_progress' && got;
      },
      { timeout: 15_000, interval: 50 },
    );
    const events = await (await call(`/responses/${id}?stream=true`)).text();
    await gateway.charged(20_000);
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.id, requestId));
    const sequences = [...events.matchAll(/"sequence_number":(\d+)/g)].map((m) => Number(m[1]));
    return { status: read.status, events, sequences, records };
  }

  /** What every witness must agree on, whichever way the race went. */
  function agree(outcome: Awaited<ReturnType<typeof told>>, cancelAnswer: { status: number; body: Json }) {
    expect(['completed', 'cancelled']).toContain(outcome.status);
    expect(outcome.sequences).toEqual(outcome.sequences.map((_, index) => index));
    expect(outcome.records).toHaveLength(1);
    const record = outcome.records[0]!;
    if (outcome.status === 'completed') {
      expect(outcome.events.includes('event: response.completed'), 'its kept events end completed').toBe(true);
      expect(record).toMatchObject({ status: 200, completionTokens: ANSWER_TOKENS });
      // Too late to cancel: the answer is the response as it ended, or a 400 saying it is finished.
      if (cancelAnswer.status === 200) expect(cancelAnswer.body.status).toBe('completed');
      else expect(cancelAnswer.status).toBe(400);
    } else {
      expect(outcome.events.includes('event: response.completed'), 'its kept events end completed').toBe(false);
      expect(record.status).toBe(499);
      expect(record.completionTokens).toBeLessThanOrEqual(ANSWER_TOKENS);
      expect(cancelAnswer).toMatchObject({ status: 200, body: { status: 'cancelled' } });
    }
  }

  async function cancel(id: string) {
    const answer = await call(`/responses/${id}/cancel`, {});
    return { status: answer.status, body: (await answer.json()) as Json };
  }

  /**
   * Holds the watched job at one step of its end until released: while the finished response is
   * kept (inside the engine stream's end, before it is settled), or while its last events are
   * written (after it was settled). Counts the reads of the job, which a cancel polls.
   */
  function holdAt(step: 'keeping the response' | 'writing its last events') {
    const jobs = gateway.services.backgroundResponses.store;
    const responses = gateway.services.responseStore;
    const appendEvents = jobs.appendEvents.bind(jobs);
    const get = jobs.get.bind(jobs);
    const save = responses.save.bind(responses);
    const held = { id: null as string | null, reads: 0, reached: null as unknown as Promise<void> };
    let reach!: () => void;
    held.reached = new Promise<void>((resolve) => (reach = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const hold = async () => {
      reach();
      await released;
    };
    jobs.appendEvents = async (id, events) => {
      const last = events.some(([, event]) => event.startsWith('event: response.completed'));
      if (step === 'writing its last events' && id === held.id && last) await hold();
      return appendEvents(id, events);
    };
    jobs.get = async (orgId, id) => {
      if (id === held.id) held.reads++;
      return get(orgId, id);
    };
    responses.save = async (stored) => {
      if (step === 'keeping the response' && stored.id === held.id) await hold();
      return save(stored);
    };
    const restore = () => {
      release();
      // The stores' own methods again (the stand-ins were the instances' own properties).
      for (const name of ['appendEvents', 'get']) Reflect.deleteProperty(jobs, name);
      Reflect.deleteProperty(responses, 'save');
    };
    return { held, release, restore };
  }

  it.each(['keeping the response', 'writing its last events'] as const)(
    'a cancel landing after the engine finished, while %s, leaves it completed',
    async (step) => {
      const { held, release, restore } = holdAt(step);
      try {
        const { id, requestId } = await queued();
        held.id = id;
        await held.reached;
        const readsBefore = held.reads;
        const cancelled = cancel(id);
        // The cancel has read the job (in progress), stopped it where it runs, and polls it.
        await until('the cancel polls the job', () => held.reads >= readsBefore + 2, { timeout: 5_000, interval: 5 });
        release();
        const answer = await cancelled;
        const outcome = await told(id, requestId);
        agree(outcome, answer);
        expect(outcome.status).toBe('completed');
      } finally {
        restore();
      }
    },
    30_000,
  );

  it('cancels landing all around the end: each one ends one way, told alike, billed once', async () => {
    const startedBefore = sim.stats();
    const seen = new Set<string>();
    for (let run = 0; run < 10; run++) {
      const { id, requestId } = await queued();
      // The race itself is the subject: a cancel from before the last token to after it.
      await new Promise((resolve) => setTimeout(resolve, 150 + run * 30));
      const answer = await cancel(id);
      const outcome = await told(id, requestId);
      agree(outcome, answer);
      seen.add(outcome.status as string);
    }
    console.info(`cancel races: outcomes seen ${[...seen].join(', ')}`);
    const stats = sim.stats();
    expect(stats.completed + stats.aborted - startedBefore.completed - startedBefore.aborted).toBe(10);
  }, 120_000);

  it('the books are whole after every race: one charge a record, the wallet their sum, no hold', async () => {
    await gateway.charged(20_000);
    const { db } = gateway.services;
    const records = await db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    const charges = await db.select().from(ledgerEntries).where(eq(ledgerEntries.orgId, tenant.orgId));
    const charged = charges.filter((entry) => entry.kind === 'charge');
    expect(records).toHaveLength(12);
    expect(charged.map((entry) => entry.requestId).sort()).toEqual(records.map((record) => record.id).sort());
    const spent = records.reduce((sum, record) => sum + record.cost, 0n);
    expect(charged.reduce((sum, entry) => sum - entry.amount, 0n)).toBe(spent);
    const [wallet] = await db.select().from(wallets).where(eq(wallets.orgId, tenant.orgId));
    expect(wallet!.balance).toBe(CREDIT - spent);
    await until(
      'every hold is given back',
      async () => (await gateway.services.gateKeeper.gate.walletState(tenant.orgId)).holds.length === 0,
      { timeout: 10_000 },
    );
  }, 30_000);
});
