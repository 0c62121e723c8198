import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

/**
 * Issue 48, item 2: bodies built to make the Messages and Responses translations slow or large.
 * Each is answered in time that grows in proportion to the body (the full body against a tenth of
 * it, timed side by side), while another organization's chat keeps its latency and the gateway's
 * memory stays put. Before the fix, the namespace body built about 629 MB of names (the event loop
 * stalled for 17-29 s) and 20,000 function calls were translated in quadratic time before the
 * wallet was checked.
 */
describe('hostile bodies for the translations', () => {
  let gateway: TestGateway;
  let attacker: string;
  let broke: string;
  let neighbour: string;

  beforeAll(async () => {
    gateway = await startTestGateway('pglite');
    attacker = (await gateway.tenant({ key: { requestsPerMinute: 10_000, maxConcurrency: 100 } })).secret;
    broke = (await gateway.tenant({ credit: '0', key: { requestsPerMinute: 10_000 } })).secret;
    neighbour = (await gateway.tenant({ key: { requestsPerMinute: 10_000 } })).secret;
  });
  afterAll(() => gateway?.close());

  const post = (path: string, secret: string, body: unknown) =>
    fetch(`${gateway.baseURL}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });

  const neighbourChat = async (): Promise<number> => {
    const started = performance.now();
    const response = await post('/chat/completions', neighbour, {
      model: 'sim-chat',
      max_tokens: 2,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    return performance.now() - started;
  };

  /**
   * Sends the attack at full size and at a tenth of it, in turns (several times each), while the
   * neighbour chats in a loop: each answer's status and time, the neighbour's slowest chat before
   * and during, and how much the process grew. Times are compared with each other, measured side
   * by side on the same machine, never with a fixed figure: a loaded machine slows them alike.
   */
  async function underAttack(attack: (scale: number) => Promise<Response>, copies = 5) {
    const baseline = Math.max(...(await sequence(5, neighbourChat)));
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    let attacking = true;
    const during: number[] = [];
    const chats = (async () => {
      while (attacking) during.push(await neighbourChat());
    })();
    const answers: Answer[] = [];
    const tenths: Answer[] = [];
    for (let i = 0; i < copies; i++) {
      tenths.push(await timed(() => attack(SCALE)));
      answers.push(await timed(() => attack(1)));
    }
    attacking = false;
    await chats;
    const grewMb = (process.memoryUsage().rss - rssBefore) / 2 ** 20;
    const slowest = Math.max(0, ...during);
    const figures = (list: Answer[]) => list.map((a) => `${a.status} in ${Math.round(a.ms)} ms`).join(', ');
    console.log(
      `full size: ${figures(answers)}; a tenth: ${figures(tenths)}; neighbour's slowest chat ${Math.round(slowest)} ms (before: ${Math.round(baseline)}); RSS ${grewMb.toFixed(0)} MB`,
    );
    return { answers, tenths, baseline, slowest, grewMb };
  }

  const expectContained = (result: Awaited<ReturnType<typeof underAttack>>) => {
    for (const answer of [...result.answers, ...result.tenths]) {
      expect(answer.status, answer.text.slice(0, 300)).toBeLessThan(500);
    }
    // Work that grows in proportion to the body: ten times the body takes at most about ten times
    // as long (less, for the fixed costs of a request). The quadratic translation took a hundred
    // times as long, the namespace's names (length times count) too; 30 leaves a loaded machine's
    // noise a factor of three either way. The median of each size, as one answer can be slowed (or
    // a small one sped) by what else the machine runs.
    expect(
      median(result.answers) / median(result.tenths),
      'full size against a tenth, the median of each',
    ).toBeLessThan(30);
    // Flat: the neighbour waits at most for the attacks' own (linear) work, never for a stall
    // beyond it (before the fix, the event loop was held for 17-29 s).
    const attacksMs = [...result.answers, ...result.tenths].reduce((sum, a) => sum + a.ms, 0);
    expect(result.slowest, "the neighbour's slowest chat against the attacks' whole time").toBeLessThan(
      2 * result.baseline + attacksMs,
    );
    expect(result.grewMb).toBeLessThan(100);
  };

  it('a namespace tool with a long name and 600 functions (1 MB): a 400 naming the bound, in linear time', async () => {
    // A tenth of the name and a tenth of the functions: the names built before the fix (the name
    // repeated for each function) were a hundredth.
    const body = (scale: number) =>
      JSON.stringify({
        model: 'sim-chat',
        input: 'hi',
        max_output_tokens: 4,
        tools: [
          {
            type: 'namespace',
            name: 'n'.repeat(sized(1_000_000, scale)),
            tools: Array.from({ length: sized(600, scale) }, (_, i) => ({ type: 'function', name: `f${i}` })),
          },
        ],
      });
    const bodies = new Map([1, SCALE].map((scale) => [scale, body(scale)]));
    const result = await underAttack((scale) => post('/responses', attacker, bodies.get(scale)));
    expectContained(result);
    for (const answer of [...result.answers, ...result.tenths]) {
      expect(answer.status).toBe(400);
      expect(answer.text).toContain('TOLLGATE_TRANSLATION_MAX_NAME_CHARS');
      // The name is not echoed.
      expect(answer.text).not.toContain('nnnnnnnnnnnnnnnnnnnnnnnn');
    }
  }, 120_000);

  it('20,000 function_call items (500 KB): a key with no money gets its 402 in linear time', async () => {
    const bodies = new Map([1, SCALE].map((scale) => [scale, functionCalls(sized(20_000, scale) - 1)]));
    const result = await underAttack((scale) => post('/responses', broke, bodies.get(scale)));
    expectContained(result);
    for (const answer of [...result.answers, ...result.tenths]) expect(answer.status).toBe(402);
  }, 120_000);

  // Not stored: storing 20,000 input items in the embedded PGlite takes over a second of its own
  // (the store's to bound).
  it('20,000 function_call items from a funded key: answered (served or refused) in linear time', async () => {
    const bodies = new Map(
      [1, SCALE].map((scale) => [scale, functionCalls(sized(20_000, scale) - 1, { store: false })]),
    );
    const result = await underAttack((scale) => post('/responses', attacker, bodies.get(scale)));
    expectContained(result);
  }, 120_000);

  it('Messages: 20,000 tool_use blocks in one assistant turn, answered in linear time', async () => {
    const body = (scale: number) =>
      JSON.stringify({
        model: 'sim-chat',
        max_tokens: 4,
        messages: [
          { role: 'user', content: 'go' },
          {
            role: 'assistant',
            content: Array.from({ length: sized(20_000, scale) - 10 }, (_, i) => ({
              type: 'tool_use',
              id: `t${i}`,
              name: 'f',
              input: {},
            })),
          },
          { role: 'user', content: 'next' },
        ],
      });
    const bodies = new Map([1, SCALE].map((scale) => [scale, body(scale)]));
    const result = await underAttack((scale) => post('/messages', broke, bodies.get(scale)));
    expectContained(result);
  }, 120_000);
});

function functionCalls(count: number, extra: Record<string, unknown> = {}): string {
  const items = Array.from({ length: count }, (_, i) => ({
    type: 'function_call',
    call_id: `c${i}`,
    name: 'f',
    arguments: '{}',
  }));
  const input = [{ role: 'user', content: 'go' }, ...items];
  return JSON.stringify(Object.assign({ model: 'sim-chat', max_output_tokens: 4, input }, extra));
}

/** The attack at a tenth of its size, timed beside the full one. */
const SCALE = 0.1;
const sized = (count: number, scale: number) => Math.round(count * scale);

interface Answer {
  status: number;
  ms: number;
  text: string;
}

function median(answers: Answer[]): number {
  const sorted = answers.map((a) => a.ms).sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function timed(send: () => Promise<Response>): Promise<Answer> {
  const started = performance.now();
  const response = await send();
  const text = await response.text();
  return { status: response.status, ms: performance.now() - started, text };
}

async function sequence(count: number, step: () => Promise<number>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push(await step());
  return out;
}
