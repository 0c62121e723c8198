import { eq } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';

/**
 * Issue 48, item 4: bodies generated from the shapes of `/v1/messages`,
 * `/v1/messages/count_tokens`, `/v1/responses` and (issue 71) `/v1/responses/input_tokens`, item
 * references included (each field valid, null, another type, nested deep, or an id with a NUL, an
 * unpaired surrogate or a thousand characters), sent one after another by a key allowed one request
 * in flight. Never a 5xx; never a hold, a slot or a charge left behind by a refusal: the key is
 * never refused for concurrency, the wallet's holds are empty and its spendable amount is the
 * ledger's balance at the end, and the usage records are as many as the requests served. Before,
 * `tools: [null]` was a 500 on all three routes.
 */
const SEED = 20_261_126;
/** The routes that count and bill nothing: no usage record. */
const COUNTS = new Set(['/messages/count_tokens', '/responses/input_tokens']);
const RUNS = 60;

const anything = fc.jsonValue({ maxDepth: 3 });
const deep = fc.integer({ min: 60, max: 400 }).map((depth) => {
  let value: unknown = 'x';
  for (let i = 0; i < depth; i++) value = [value];
  return value;
});
const hostile = fc.oneof(fc.constant(null), fc.constant([null]), fc.constant({}), anything, deep);
/** A field a client may leave out: usually left out, sometimes anything hostile. */
const sometimes = fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: hostile });
const id = fc.oneof(
  { weight: 12, arbitrary: fc.stringMatching(/^[a-z_]{1,12}$/) },
  fc.constant('a\u0000b'),
  fc.constant('x\ud800'),
  fc.constant('i'.repeat(1_000)),
  fc.constant(''),
  fc.constant(null),
  fc.integer(),
);
/** A field: usually a plausible value, sometimes anything hostile. */
const field = <T>(plausible: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 8, arbitrary: plausible }, { weight: 1, arbitrary: hostile });

const anthropicBlock = fc.record(
  {
    type: field(fc.constantFrom('text', 'image', 'tool_use', 'tool_result', 'thinking')),
    text: field(fc.string({ maxLength: 20 })),
    id,
    name: id,
    input: sometimes,
    tool_use_id: id,
    content: field(
      fc.oneof(fc.string({ maxLength: 10 }), fc.array(fc.record({ type: fc.constant('text'), text: fc.string() }))),
    ),
    source: sometimes,
  },
  { requiredKeys: ['type'] },
);
const anthropicMessage = fc.record({
  role: field(fc.constantFrom('user', 'assistant', 'system')),
  content: field(fc.oneof(fc.string({ maxLength: 20 }), fc.array(anthropicBlock, { maxLength: 4 }))),
});
const anthropicTool = field(
  fc.record({ name: id, description: field(fc.string()), input_schema: field(fc.constant({ type: 'object' })) }),
);
const messagesBody = fc.record(
  {
    model: fc.constant('sim-chat'),
    max_tokens: field(fc.integer({ min: 1, max: 8 })),
    messages: field(fc.array(anthropicMessage, { minLength: 1, maxLength: 4 })),
    system: field(fc.string({ maxLength: 20 })),
    tools: field(fc.array(anthropicTool, { maxLength: 3 })),
    tool_choice: field(fc.record({ type: fc.constantFrom('auto', 'any', 'tool', 'none'), name: id })),
    stream: field(fc.boolean()),
    stop_sequences: sometimes,
  },
  { requiredKeys: ['model'] },
);

const responsesItem = fc.record({
  type: field(
    fc.constantFrom(
      'message',
      'function_call',
      'function_call_output',
      'custom_tool_call',
      'reasoning',
      'item_reference',
    ),
  ),
  role: field(fc.constantFrom('user', 'assistant', 'system', 'developer')),
  content: field(
    fc.oneof(fc.string({ maxLength: 20 }), fc.array(fc.record({ type: fc.constant('input_text'), text: fc.string() }))),
  ),
  id,
  call_id: id,
  name: id,
  namespace: id,
  arguments: sometimes,
  output: sometimes,
});
const responsesTool = field(
  fc.record({
    type: field(fc.constantFrom('function', 'custom', 'namespace', 'web_search')),
    name: id,
    parameters: sometimes,
    tools: field(
      fc.array(field(fc.record({ type: fc.constantFrom('function', 'custom'), name: id })), { maxLength: 3 }),
    ),
  }),
);
const responsesBody = fc.record(
  {
    model: fc.constant('sim-chat'),
    input: field(fc.oneof(fc.string({ maxLength: 20 }), fc.array(responsesItem, { minLength: 1, maxLength: 4 }))),
    instructions: field(fc.string({ maxLength: 20 })),
    max_output_tokens: field(fc.integer({ min: 1, max: 8 })),
    tools: field(fc.array(responsesTool, { maxLength: 3 })),
    tool_choice: field(
      fc.oneof(fc.constantFrom('auto', 'none', 'required'), fc.record({ type: fc.constant('function'), name: id })),
    ),
    text: sometimes,
    reasoning: sometimes,
    stream: field(fc.boolean()),
    store: field(fc.boolean()),
    metadata: sometimes,
  },
  { requiredKeys: ['model', 'input'] },
);

describe('generated bodies on the agents’ routes', () => {
  let gateway: TestGateway;
  let secret: string;
  let orgId: string;
  let keyId: string;
  const statuses = new Map<string, number>();
  let served = 0;

  beforeAll(async () => {
    gateway = await startTestGateway('pglite');
    ({ secret, orgId, keyId } = await gateway.tenant({
      credit: '100.00',
      key: { requestsPerMinute: 1_000_000, maxConcurrency: 1 },
    }));
  });
  afterAll(async () => {
    console.log(`agent routes fuzz: answers by route and status ${JSON.stringify(Object.fromEntries(statuses))}`);
    await gateway?.close();
  });

  async function send(path: string, body: unknown): Promise<void> {
    const response = await fetch(`${gateway.baseURL}${path}`, {
      method: 'POST',
      headers: { 'x-api-key': secret, authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    const key = `${path} ${response.status}`;
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
    expect(response.status, `${key}: ${text.slice(0, 300)}`).toBeLessThan(500);
    // One request at a time on a key allowed one in flight: a refusal for concurrency is a slot
    // left behind.
    expect(text).not.toContain('concurrency_limit_exceeded');
    // An id is never echoed whole.
    expect(text).not.toContain('i'.repeat(100));
    if (response.status === 200 && !COUNTS.has(path)) served += 1;
  }

  it('never answers 5xx and leaves no hold, slot or charge behind its refusals', async () => {
    const property = (path: string, body: fc.Arbitrary<Record<string, unknown>>) =>
      fc.assert(
        fc.asyncProperty(body, (generated) => send(path, generated)),
        { seed: SEED, numRuns: RUNS },
      );
    await property('/messages', messagesBody);
    await property('/messages/count_tokens', messagesBody);
    await property('/responses', responsesBody);
    await property('/responses/input_tokens', responsesBody);
    await send('/messages', { model: 'sim-chat', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] });
    expect(served).toBeGreaterThan(0);

    await gateway.charged();
    const gate = gateway.services.gateKeeper.gate;
    expect((await gate.walletState(orgId)).holds).toEqual([]);
    const balance = await gateway.services.wallets.balance(orgId);
    await until('the spendable amount is the ledger balance', async () => (await gate.spendable(orgId)) === balance);
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.keyId, keyId));
    expect(records).toHaveLength(served);
  }, 300_000);
});
