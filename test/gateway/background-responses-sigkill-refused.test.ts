import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/sim/index.js';
import { expectBooksWhole, fundedKey, jobRows, killableFleet, leftStream } from '../helpers/background-kills.js';
import type { BilledReplicas } from '../helpers/billed-replicas.js';
import { openApiErrors } from '../helpers/openapi.js';
import { scrape } from '../helpers/prometheus.js';
import { postgresAndRedisOrSkip } from '../helpers/services.js';
import { until } from '../helpers/wait.js';

type Json = Record<string, unknown>;

/**
 * A background response whose replica is SIGKILLed mid-generation and whose takeover is refused
 * for good (issue 71): its model is disabled before the other replica takes it over, so it cannot
 * be admitted again. It fails, showing the text generated before the kill (as its kept events
 * have it) and the usage billed; it is billed once, by the replica that took it over, what the
 * engine counted (the prompt exactly, the generated tokens less what the kill lost), and billed
 * no more when the killed replica comes back with its journal's checkpoints of it.
 */

const ready = await postgresAndRedisOrSkip('the refused takeover of a background response');

const ADMIN_TOKEN = 'background-refused-operator-token-01';
/** Tokens asked for: 40 s on the engine, far longer than the test lets it run. */
const ASKED = 2_000;
/**
 * Tokens the kill may lose: those generated after the replica last wrote its count (every 250 ms)
 * and before the engine saw its connection close.
 */
const SLACK = 50;
/** `sim-chat`'s prices a token, in nano-units (0.15 and 0.60 a million: `addSimChat`). */
const INPUT_NANOS = 150n;
const OUTPUT_NANOS = 600n;

describe.skipIf(!ready)('a background response whose replica is SIGKILLed and whose takeover is refused', () => {
  let sim: RunningSimulator;
  let fleet: BilledReplicas;

  beforeAll(async () => {
    ({ sim, fleet } = await killableFleet(ADMIN_TOKEN, {}));
  }, 60_000);

  afterAll(async () => {
    await fleet?.close();
    await sim?.close().catch(() => {});
  }, 60_000);

  it('fails showing what it generated, billed once at the engine count', async () => {
    const one = await fleet.start('one');
    await fleet.addSimChat(one);
    const { orgId, secret, call } = await fundedKey(fleet, one, 'background refused');
    const two = await fleet.start('two');
    const start = sim.stats();
    const job = await leftStream(call, one, { input: 'Write at length.', max_output_tokens: ASKED });
    await until(
      'the engine has generated a good part of it',
      async () => (await jobRows(fleet.sql, [job.id]))[0]!.generated_tokens >= 80,
      { timeout: 20_000, interval: 20 },
    );
    // Killed first: a model disabled while its replica lives stops the job there (a cancel).
    await fleet.kill(one);
    // Refused for good once taken over: its model is disabled, through the replica that takes it
    // over (whose own write drops its cache at once), before the killed replica's lease runs out.
    await fleet.admin(two, 'PATCH', '/models/sim-chat', { enabled: false });

    const client = new OpenAI({ apiKey: secret, baseURL: `${two.url}/v1`, maxRetries: 0 });
    const failed = (await until(
      'the other replica has failed it',
      async () => {
        const read = await client.responses.retrieve(job.id);
        return read.status === 'failed' && read;
      },
      { timeout: 30_000, interval: 200 },
    )) as unknown as Json;
    const engine = sim.stats();
    expect(engine.running).toBe(0);
    const enginePrompt = engine.promptTokens - start.promptTokens;
    const engineGenerated = engine.generationTokens - start.generationTokens;

    // What a client reads: failed, with the text generated before the kill and the usage billed.
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'server_error' }, incomplete_details: null });
    expect(failed.error).toMatchObject({ message: expect.any(String) });
    const output = failed.output as Json[];
    expect(output).toHaveLength(1);
    expect(output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'incomplete' });
    const text = ((output[0]!.content as Json[])[0] as { type: string; text: string }).text;
    const stream = await (await call(two, `/responses/${job.id}?stream=true`)).text();
    expect(text).toBe(deltasOf(stream).join(''));
    expect(text.startsWith(deltasOf(job.text).join(''))).toBe(true);
    const usage = failed.usage as { input_tokens: number; output_tokens: number; total_tokens: number };
    expect(usage.input_tokens).toBe(enginePrompt);
    expect(usage.output_tokens).toBeLessThanOrEqual(engineGenerated);
    expect(usage.output_tokens).toBeGreaterThanOrEqual(engineGenerated - SLACK);
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    // The stream read again ends as the response does (as the gateway writes it: the SDK adds
    // `output_text`).
    const last = /event: (\S+)\ndata: (.*)\n\n$/.exec(stream);
    expect(last?.[1]).toBe('response.failed');
    const read = (await (await call(two, `/responses/${job.id}`)).json()) as Json;
    expect(openApiErrors('Response', read), "OpenAI's Response object").toEqual([]);
    expect((JSON.parse(last![2]!) as { response: Json }).response).toEqual(read);

    // Another organization's key finds nothing.
    const other = await fundedKey(fleet, two, 'another organization');
    const stranger = new OpenAI({ apiKey: other.secret, baseURL: `${two.url}/v1`, maxRetries: 0 });
    await expect(stranger.responses.retrieve(job.id)).rejects.toMatchObject({ status: 404 });
    expect((await other.call(two, `/responses/${job.id}?stream=true`)).status).toBe(404);

    // Billed by the replica that took it over, with the killed one still down: once, as shown.
    await until(
      'the charge is written',
      async () => (await fleet.sql`select 1 from usage_records where org_id = ${orgId}`).length > 0,
      { timeout: 15_000, interval: 100 },
    );
    const billed = { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens, status: 500 };
    const cost = BigInt(usage.input_tokens) * INPUT_NANOS + BigInt(usage.output_tokens) * OUTPUT_NANOS;
    const [record] = await expectBooksWhole(fleet, orgId, [job.requestId]);
    expect(record).toMatchObject({ ...billed, cost_nanos: cost.toString() });

    // The killed replica comes back with its journal's checkpoints of it: billed no more.
    const again = await fleet.start('one');
    await until(
      'the restarted replica has written its journal',
      async () => (await scrape(`${again.url}/metrics`, ADMIN_TOKEN)).value('tollgate_charge_spool_depth') === 0,
      { timeout: 20_000, interval: 200 },
    );
    const [after] = await expectBooksWhole(fleet, orgId, [job.requestId]);
    expect(after).toEqual(record);
    console.info(
      `background refused takeover: the engine read ${enginePrompt} and generated ${engineGenerated} tokens, ` +
        `billed ${usage.input_tokens} + ${usage.output_tokens}; the failed response shows ${text.length} characters`,
    );
  }, 120_000);
});

/** The text deltas of a Responses stream's whole events, in order. */
function deltasOf(text: string): string[] {
  const whole = text.slice(0, text.lastIndexOf('\n\n') + 2);
  return [...whole.matchAll(/^data: (\{"type":"response\.output_text\.delta".*)$/gm)].map(
    (match) => (JSON.parse(match[1]!) as { delta: string }).delta,
  );
}
