import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/sim/index.js';
import {
  expectBooksWhole,
  fundedKey,
  jobRows,
  killableFleet,
  leftStream,
  sequencesOf,
} from '../helpers/background-kills.js';
import type { BilledReplicas } from '../helpers/billed-replicas.js';
import { scrape } from '../helpers/prometheus.js';
import { postgresAndRedisOrSkip } from '../helpers/services.js';
import { until } from '../helpers/wait.js';

type Json = Record<string, unknown>;

/**
 * Background responses under a real SIGKILL (issue 71): two replicas on PostgreSQL and Redis; on
 * the first, two responses run on the engine (one continuing a conversation) and two wait for room
 * (the engine runs two at once; one continues another conversation). The first replica is
 * SIGKILLed and started again on its data folder. The second takes the four over: the two the
 * engine had end failed, billed what they generated once; the two it never had run there to
 * completion, billed once, the conversation's turn appended once. A stream resumed on the second
 * replica across the kill has no event lost or repeated.
 */

const ready = await postgresAndRedisOrSkip('the SIGKILLed background responses test');

const ADMIN_TOKEN = 'background-sigkill-operator-token-01';
/**
 * Tokens of a short answer: about 1.2 s on the engine. Asked for with `max_output_tokens`, the
 * simulator's answers stop there: such a response ends `incomplete`, finished as `completed` is.
 */
const SHORT = 60;
/** Tokens a cut response may be billed short of what the engine generated: its last writes lost. */
const SLACK = 50;

describe.skipIf(!ready)('background responses whose replica is SIGKILLed', () => {
  let sim: RunningSimulator;
  let fleet: BilledReplicas;

  beforeAll(async () => {
    // Two at once on the engine: the third and fourth response wait in the gateway for room.
    ({ sim, fleet } = await killableFleet(ADMIN_TOKEN, { max_num_seqs: 2 }));
  }, 60_000);

  afterAll(async () => {
    await fleet?.close();
    await sim?.close().catch(() => {});
  }, 60_000);

  it('are completed by the other replica or failed with their tokens billed, once; a resumed stream is whole', async () => {
    const one = await fleet.start('one');
    await fleet.addSimChat(one);
    const { orgId, call } = await fundedKey(fleet, one, 'background killed');
    const two = await fleet.start('two');
    const conversation = async () => ((await (await call(one, '/conversations', {})).json()) as { id: string }).id;
    const [failedTurns, finishedTurns] = [await conversation(), await conversation()];
    const start = sim.stats();

    // Two long streamed responses on the engine; each client leaves after some events.
    const long: Array<{ id: string; requestId: string; seen: number[] }> = [];
    for (const extra of [{}, { conversation: failedTurns }])
      long.push(await leftStream(call, one, { input: 'Write at length.', ...extra }));
    // Two short ones wait for room (the engine runs two at once), one continuing a conversation.
    const short: Array<{ id: string; requestId: string }> = [];
    for (const extra of [{}, { conversation: finishedTurns }]) {
      const answer = await call(one, '/responses', {
        model: 'sim-chat',
        input: 'Hi.',
        background: true,
        max_output_tokens: SHORT,
        ...extra,
      });
      expect(answer.status).toBe(200);
      short.push({ id: ((await answer.json()) as { id: string }).id, requestId: answer.headers.get('x-request-id')! });
    }
    const ids = [...long, ...short].map((job) => job.id);
    const rowsOf = () => jobRows(fleet.sql, ids);
    let seenRows: unknown = null;
    const atKill = await until(
      'the long ones have generated a good part on the engine, the short ones wait',
      async () => {
        const rows = new Map((await rowsOf()).map((row) => [row.id, row]));
        seenRows = [...rows.values()];
        const ready =
          long.every((job) => rows.get(job.id)!.generated_tokens >= 80) &&
          short.every((job) => rows.get(job.id)!.status === 'queued' && !rows.get(job.id)!.reached_engine);
        return ready && rows;
      },
      { timeout: 20_000, interval: 20, detail: () => JSON.stringify(seenRows) },
    );
    expect(sim.stats().running).toBe(2);
    const claimedBy = new RegExp(`^${hostname()}:${one.child.pid}:`);
    for (const row of atKill.values()) expect(row.claimed_by).toMatch(claimedBy);

    // The first long stream, resumed on the other replica after its client's last event, across the
    // kill.
    const [first] = long;
    const resumedFrom = first!.seen[first!.seen.length - 1]!;
    const resumed = call(two, `/responses/${first!.id}?stream=true&starting_after=${resumedFrom}`).then((r) =>
      r.text(),
    );
    await fleet.kill(one);

    const ended = await until(
      'the other replica has ended all four',
      async () => {
        const read = await Promise.all(
          ids.map(async (id) => (await (await call(two, `/responses/${id}`)).json()) as Json),
        );
        return read.every((r) => r.status !== 'queued' && r.status !== 'in_progress') && read;
      },
      { timeout: 40_000, interval: 200 },
    );
    const again = await fleet.start('one');
    await until(
      'the restarted replica has written its journal',
      async () => (await scrape(`${again.url}/metrics`, ADMIN_TOKEN)).value('tollgate_charge_spool_depth') === 0,
      { timeout: 20_000, interval: 200 },
    );

    // What a client reads: the two the engine had failed, the two it never had completed.
    const [r1, r2, r3, r4] = ended;
    for (const failed of [r1, r2]) expect(failed).toMatchObject({ status: 'failed', error: { code: 'server_error' } });
    // Each failed one shows the text generated before the kill, cut off (its usage: with the
    // books).
    for (const failed of [r1, r2])
      expect((failed!.output as Json[])[0]).toMatchObject({ type: 'message', status: 'incomplete' });
    for (const done of [r3, r4]) expect(done).toMatchObject({ status: 'incomplete', usage: { output_tokens: SHORT } });
    const twoReplica = new RegExp(`^${hostname()}:${two.child.pid}:`);
    for (const row of await rowsOf()) expect(row.claimed_by).toMatch(twoReplica);

    // The resumed stream: every event after the client's last, none lost or repeated.
    const rest = await resumed;
    const after = sequencesOf(rest);
    const all = [...first!.seen, ...after];
    expect(all).toEqual(all.map((_, index) => index));
    const again2 = await (await call(two, `/responses/${first!.id}?stream=true&starting_after=${resumedFrom}`)).text();
    expect(sequencesOf(again2)).toEqual(after);
    const lastEvent = /event: (\S+)\n[^\n]*\n\n$/.exec(rest)?.[1];
    // It ends as a Responses stream does, failed by the replica that took it over.
    expect(lastEvent).toBe('response.failed');
    expect(JSON.parse(/data: (.*)\n\n$/.exec(rest)![1]!)).toMatchObject({ response: { status: 'failed' } });

    // The books: one record and one charge a request id, the wallet their sum, no hold.
    const requestIds = [...long, ...short].map((job) => job.requestId);
    const records = await expectBooksWhole(fleet, orgId, requestIds);
    const recordOf = (requestId: string) => records.find((r) => r.id === requestId)!;
    for (const job of long) expect(recordOf(job.requestId).status).toBe(500);
    for (const [index, job] of long.entries()) {
      const { prompt_tokens: input_tokens, completion_tokens: output_tokens } = recordOf(job.requestId);
      expect(ended[index]!.usage, 'a failed one shows the usage it was billed').toMatchObject({
        input_tokens,
        output_tokens,
      });
    }
    for (const job of short) expect(recordOf(job.requestId)).toMatchObject({ status: 200, completion_tokens: SHORT });

    // The engine's own count: the short ones generated once each (never on the killed replica);
    // the long ones are billed what the engine generated for them, less what the kill lost.
    const generated = sim.stats().generationTokens - start.generationTokens;
    const longGenerated = generated - short.length * SHORT;
    const longBilled = long.reduce((sum, job) => sum + recordOf(job.requestId).completion_tokens, 0);
    expect(longBilled).toBeLessThanOrEqual(longGenerated);
    expect(longBilled).toBeGreaterThanOrEqual(longGenerated - long.length * SLACK);

    // The conversations: the completed turn appended once (its input and its answer), the failed
    // none.
    const itemsOf = async (id: string) =>
      ((await (await call(two, `/conversations/${id}/items?limit=100`)).json()) as { data: Json[] }).data;
    const finishedItems = await itemsOf(finishedTurns);
    expect(finishedItems.map((item) => item.role)).toEqual(expect.arrayContaining(['user', 'assistant']));
    expect(finishedItems).toHaveLength(2);
    expect(await itemsOf(failedTurns)).toHaveLength(0);
    console.info(
      `background SIGKILL: the engine generated ${longGenerated} tokens for the cut ones, billed ${longBilled} ` +
        `(${long.map((job) => recordOf(job.requestId).completion_tokens).join(' + ')}); the resumed stream read ` +
        `${after.length} events after ${resumedFrom}, its last event ${lastEvent ?? 'none'}`,
    );
  }, 150_000);
});
