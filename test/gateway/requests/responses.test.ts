import { describe, expect, it } from 'vitest';
import { callItem, responseOf } from '../../../src/gateway/requests/responses/answer.js';
import { readUsualChunk } from '../../../src/gateway/proxy/usual-chunk.js';
import { ResponsesWriter } from '../../../src/gateway/requests/responses/stream.js';
import { chatBodyOf, responsesRequestErrors, toolNamesOf } from '../../../src/gateway/requests/responses/translate.js';
import { loadConfig } from '../../../src/config/index.js';

/** The default shape bounds (TOLLGATE_TRANSLATION_*). */
const BOUNDS = loadConfig({}).translation;

describe('the Responses request as chat completions', () => {
  it('puts instructions and developer text first, joins a function call to its assistant turn, and drops reasoning', () => {
    const chat = chatBodyOf({
      model: 'm',
      instructions: 'Be brief.',
      max_output_tokens: 64,
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Sandbox: none.' }] },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Read it.' },
            { type: 'input_image', image_url: 'data:image/png;base64,AA' },
          ],
        },
        {
          type: 'reasoning',
          id: 'rs_1',
          summary: [{ type: 'summary_text', text: 'thinking' }],
          encrypted_content: 'x',
        },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Reading.' }] },
        { type: 'function_call', call_id: 'c1', name: 'read', arguments: '{"path":"a"}' },
        { type: 'function_call', call_id: 'c2', name: 'list', namespace: 'files', arguments: '' },
        { type: 'function_call_output', call_id: 'c1', output: 'hello' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'a b' }] },
      ],
    });
    expect(chat).toEqual({
      model: 'm',
      max_tokens: 64,
      messages: [
        { role: 'system', content: 'Be brief.\n\nSandbox: none.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Read it.' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Reading.',
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'read', arguments: '{"path":"a"}' } },
            { id: 'c2', type: 'function', function: { name: 'files__list', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'hello' },
        { role: 'tool', tool_call_id: 'c2', content: 'a b' },
      ],
    });
  });

  it('sends function, namespaced and custom tools, drops built-in ones, and maps text.format and reasoning', () => {
    const body = {
      model: 'm',
      input: 'Hi',
      tools: [
        { type: 'function', name: 'f', parameters: { type: 'object' }, strict: true },
        { type: 'namespace', name: 'ns', description: 'd', tools: [{ type: 'function', name: 'g', description: 'G' }] },
        { type: 'custom', name: 'apply_patch', description: 'Patch' },
        { type: 'web_search' },
        { type: 'file_search', vector_store_ids: ['v'] },
      ],
      tool_choice: { type: 'function', name: 'f' },
      text: { format: { type: 'json_schema', name: 'x', schema: { type: 'object' }, strict: true }, verbosity: 'low' },
      reasoning: { effort: 'high', summary: 'auto' },
      include: ['reasoning.encrypted_content'],
    };
    const chat = chatBodyOf(body);
    expect((chat.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name)).toEqual([
      'f',
      'ns__g',
      'apply_patch',
    ]);
    expect(chat).toMatchObject({
      tool_choice: { type: 'function', function: { name: 'f' } },
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' }, strict: true } },
      reasoning_effort: 'high',
    });
    expect(chat).not.toHaveProperty('include');
    const names = toolNamesOf(body);
    expect(callItem('c', 'ns__g', '{}', names)).toMatchObject({
      type: 'function_call',
      namespace: 'ns',
      name: 'g',
      call_id: 'c',
    });
    expect(callItem('c', 'apply_patch', '{"input":"*** Begin Patch"}', names)).toMatchObject({
      type: 'custom_tool_call',
      name: 'apply_patch',
      input: '*** Begin Patch',
    });
  });

  it('answers incomplete at the length limit, with the usage details the engine gave', () => {
    const answer = {
      created: 1,
      choices: [{ message: { content: 'cut' }, finish_reason: 'length' }],
      usage: { prompt_tokens: 9, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 4 } },
    };
    expect(responseOf(answer, { input: 'x' }, toolNamesOf({}), 'resp_1', 'm')).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      usage: {
        input_tokens: 9,
        output_tokens: 3,
        total_tokens: 12,
        input_tokens_details: { cached_tokens: 4 },
        output_tokens_details: { reasoning_tokens: 0 },
      },
    });
  });

  it('refuses what it cannot translate, with the field named', () => {
    expect(responsesRequestErrors({ input: 3 }, BOUNDS)).toEqual([
      { field: 'input', message: 'must be a string or an array of input items' },
    ]);
    expect(
      responsesRequestErrors(
        { input: [{ role: 'robot', content: 'x' }, 'x'], max_output_tokens: 0, store: 'yes' },
        BOUNDS,
      ).map((detail) => detail.field),
    ).toEqual(['input[0].role', 'input[1]', 'max_output_tokens', 'store']);
    expect(
      responsesRequestErrors(
        {
          input: [{ type: 'web_search_call', id: 'ws' }],
          store: false,
          tools: [{ type: 'web_search' }],
        },
        BOUNDS,
      ),
    ).toEqual([]);
  });
});

describe('the Responses stream from the engine’s chunks', () => {
  /**
   * vLLM's chunk, compact (`usual`), or the same JSON with its fields in another order, which only
   * the general path reads.
   */
  function chunk(delta: Record<string, string>, usage: string, usual: boolean): string {
    const choices = JSON.stringify([{ index: 0, delta, logprobs: null, finish_reason: null }]);
    const head = '"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m"';
    return usual ? `{${head},"choices":${choices}${usage}}` : `{"choices":${choices}${usage},${head}}`;
  }

  function events(usual: boolean): unknown[] {
    const writer = new ResponsesWriter({
      body: { model: 'm', input: 'hi' },
      names: toolNamesOf({}),
      id: 'resp_1',
      model: 'm',
    });
    const texts: Array<Record<string, string>> = [
      { reasoning_content: 'Think \\ "quoted"' },
      { content: 'Hello, ' },
      { content: 'wörld \u2028 🚀\n' },
    ];
    let out = '';
    texts.forEach((delta, i) => {
      const usage = `,"usage":{"prompt_tokens":5,"total_tokens":${6 + i},"completion_tokens":${1 + i}}`;
      const data = chunk(delta, usage, usual);
      expect(readUsualChunk(data) !== null).toBe(usual);
      out += writer.rewrite(data) ?? '';
    });
    out += writer.finish();
    // Item ids are new each time: compare everything else.
    return out
      .split('\n\n')
      .filter(Boolean)
      .map((event) => JSON.parse(event.split('data: ')[1]!.replace(/"(rs|msg)_[A-Za-z0-9]+"/g, '"$1_x"')) as unknown);
  }

  it('writes the same events for vLLM’s usual chunk, read without parsing, as for any other', () => {
    const fast = events(true);
    expect(fast).toEqual(events(false));
    expect(fast.at(-1)).toMatchObject({
      type: 'response.completed',
      response: {
        output: [
          { type: 'reasoning', summary: [{ text: 'Think \\ "quoted"' }] },
          { type: 'message', content: [{ text: 'Hello, wörld \u2028 🚀\n' }] },
        ],
        usage: { input_tokens: 5, output_tokens: 3, total_tokens: 8 },
      },
    });
  });
});

describe('the Responses stream’s whole-response events', () => {
  /** Each event's `data:` line, as text: the bytes the client reads. */
  const dataLines = (out: string) =>
    out
      .split('\n\n')
      .filter(Boolean)
      .map((event) => event.split('data: ')[1]!);

  const source = () => ({
    body: {
      model: 'm',
      input: 'hi',
      instructions: 'Be brief. \u2028 "quoted" \\ 🚀',
      tools: [{ type: 'function', name: 'read', parameters: { type: 'object', properties: {} } }],
      metadata: { session: 's1' },
      store: false,
    },
    names: toolNamesOf({}),
    id: 'resp_1',
    model: 'm',
  });
  const textChunk = (text: string, finish: string | null) =>
    JSON.stringify({ choices: [{ index: 0, delta: { content: text }, finish_reason: finish }] });

  it('writes the response, its echo of the request written once, exactly as JSON.stringify writes it', () => {
    for (const finish of ['stop', 'length']) {
      const writer = new ResponsesWriter(source());
      let out = writer.rewrite(textChunk('Hello', null)) ?? '';
      out += writer.rewrite(textChunk(' there', finish)) ?? '';
      out += writer.finish();
      const lines = dataLines(out);
      const [created, inProgress] = lines.slice(0, 2).map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines[0]).toBe(JSON.stringify(created));
      expect(lines[1]).toBe(JSON.stringify(inProgress));
      const last = lines.at(-1)!;
      const final = writer.finalResponse();
      const type = finish === 'length' ? 'response.incomplete' : 'response.completed';
      expect(JSON.parse(last)).toMatchObject({ type, response: { status: final.status } });
      expect(last).toBe(JSON.stringify({ type, sequence_number: lines.length - 1, response: final }));
    }
  });

  it('writes a stream the engine broke off as response.failed, exactly as JSON.stringify writes it', () => {
    const writer = new ResponsesWriter(source());
    const out = (writer.rewrite(textChunk('Hel', null)) ?? '') + writer.failure();
    const lines = dataLines(out);
    const failed = JSON.parse(lines.at(-1)!) as { type: string; response: Record<string, unknown> };
    expect(failed.type).toBe('response.failed');
    expect(failed.response.instructions).toBe(source().body.instructions);
    expect(lines.at(-1)).toBe(JSON.stringify(failed));
  });
});

describe('the translation in linear time', () => {
  it('joins 100,000 function calls to one assistant turn in linear time (each was a copy of the run before)', () => {
    const input = (count: number) => [
      { role: 'user', content: 'go' },
      ...Array.from({ length: count }, (_, i) => ({
        type: 'function_call',
        call_id: `c${i}`,
        name: 'f',
        arguments: '{}',
      })),
    ];
    const full = input(100_000);
    // Against a pass of the same size that is linear for sure (a structured clone of the input,
    // which allocates as much), timed in turns, medians of five, so a loaded machine and the
    // collector slow both alike: a linear join takes a fraction of a clone's time (0.14 here), the
    // copies of the run before took seconds, tens of clones.
    const took = { translation: [] as number[], clone: [] as number[] };
    let chat: Record<string, unknown> = {};
    for (let i = 0; i < 5; i++) {
      let started = performance.now();
      structuredClone(full);
      took.clone.push(performance.now() - started);
      started = performance.now();
      chat = chatBodyOf({ model: 'm', input: full });
      took.translation.push(performance.now() - started);
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[2]!;
    expect(median(took.translation) / median(took.clone), JSON.stringify(took)).toBeLessThan(5);
    const messages = chat.messages as Array<{ tool_calls?: unknown[] }>;
    expect(messages).toHaveLength(2);
    expect(messages[1]!.tool_calls).toHaveLength(100_000);
  });

  it('refuses, naming the setting, a tool name, an id or a count past its bound, and nulls where objects go', () => {
    const fields = (body: Record<string, unknown>) => responsesRequestErrors(body, BOUNDS).map((d) => d.field);
    expect(fields({ input: 'x', tools: [null] })).toEqual(['tools[0]']);
    expect(fields({ input: 'x', tools: [{ type: 'namespace', name: 'n', tools: [null] }] })).toEqual([
      'tools[0].tools[0]',
    ]);
    expect(fields({ input: [null] })).toEqual(['input[0]']);
    expect(fields({ input: [{ type: 'function_call', call_id: 'a\u0000b', name: 'f' }] })).toEqual([
      'input[0].call_id',
    ]);
    const long = responsesRequestErrors(
      { input: 'x', tools: [{ type: 'function', name: 'f'.repeat(10_000) }] },
      BOUNDS,
    );
    expect(long[0]!.message).toContain('TOLLGATE_TRANSLATION_MAX_NAME_CHARS');
    expect(JSON.stringify(long)).not.toContain('ffffffff');
    const many = Array.from({ length: BOUNDS.maxTools }, (_, i) => ({ type: 'function', name: `f${i}` }));
    expect(responsesRequestErrors({ input: 'x', tools: many }, BOUNDS)).toEqual([]);
  });

  it('counts what its errors say: a namespace as its functions, a name in characters (an emoji is one)', () => {
    const functions = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'function', name: `f${i}` }));
    const namespace = (n: number) => ({ type: 'namespace', name: 'n', tools: functions(n) });
    // A namespace of 1,024 functions is 1,024 tools, not 1,025.
    expect(responsesRequestErrors({ input: 'x', tools: [namespace(BOUNDS.maxTools)] }, BOUNDS)).toEqual([]);
    expect(responsesRequestErrors({ input: 'x', tools: [namespace(1000), ...functions(24)] }, BOUNDS)).toEqual([]);
    expect(responsesRequestErrors({ input: 'x', tools: [namespace(BOUNDS.maxTools + 1)] }, BOUNDS)).toEqual([
      {
        field: 'tools',
        message: `must hold at most ${BOUNDS.maxTools} tools, each function of a namespace counted (TOLLGATE_TRANSLATION_MAX_TOOLS); it holds ${BOUNDS.maxTools + 1}`,
      },
    ]);
    // An empty namespace is still one: a body of them is not a body of no tools.
    const empty = Array.from({ length: BOUNDS.maxTools + 1 }, () => namespace(0));
    expect(responsesRequestErrors({ input: 'x', tools: empty }, BOUNDS).map((d) => d.field)).toEqual(['tools']);
    const named = (name: string) => responsesRequestErrors({ input: 'x', tools: [{ type: 'function', name }] }, BOUNDS);
    expect(named('🔧'.repeat(BOUNDS.maxNameChars))).toEqual([]);
    expect(named('🔧'.repeat(BOUNDS.maxNameChars + 1))).toEqual([
      {
        field: 'tools[0].name',
        message: `must be at most ${BOUNDS.maxNameChars} characters (TOLLGATE_TRANSLATION_MAX_NAME_CHARS); it holds ${BOUNDS.maxNameChars + 1}`,
      },
    ]);
  });
});
