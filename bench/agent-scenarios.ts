import { chatBodyOf as chatOfMessages } from '../src/gateway/requests/messages/translate.js';
import { chatBodyOf as chatOfResponses } from '../src/gateway/requests/responses/translate.js';
import type { Scenario } from './scenarios.js';

/**
 * What agents send (issue 50): chat bodies of 2 KB, 50 KB and 200 KB, a Claude-Code-sized Messages
 * request (a long system prompt, about 60 KB of tools, a conversation of 20 turns with tool calls
 * and their results) and a Codex-sized Responses request (about 17 KB of instructions, the whole
 * history, `store: false`), each beside a chat request of the same bytes. Every body is made here
 * from a fixed seed: the same bytes on every run and machine, nothing downloaded. `npm run
 * bench:agents` runs them (docs/benchmark.md).
 *
 * The tools are offered with `tool_choice` none: the simulator then answers text, as the other
 * scenarios do (with "auto" it needs a tool parser and would answer tool calls, which carry no
 * first token to time).
 */

const WORDS = (
  'the agent reads a file and edits the function then runs the tests again before it writes a short note about ' +
  'what changed in the module and why the request path parses each body once with its limits tokens cache keys'
).split(' ');

/**
 * Deterministic filler text of exactly `length` characters, from a small linear congruential
 * generator.
 */
export function fillerText(length: number, seed: number): string {
  let state = seed >>> 0 || 1;
  const parts: string[] = [];
  let size = 0;
  while (size <= length) {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    const word = WORDS[state % WORDS.length]!;
    parts.push(word);
    size += word.length + 1;
  }
  return parts.join(' ').slice(0, length);
}

/** A chat body whose JSON is `bytes` long: a system prompt and one user message of filler. */
export function chatOfBytes(bytes: number, tokens: number, stream: boolean, seed = 1): Record<string, unknown> {
  const body = (text: string) => ({
    model: 'sim-chat',
    messages: [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: text },
    ],
    max_tokens: tokens,
    ignore_eos: true,
    ...(stream ? { stream: true } : {}),
  });
  const empty = JSON.stringify(body('')).length;
  return body(fillerText(Math.max(0, bytes - empty), seed));
}

/**
 * An agent's turn as a chat body of about `bytes`: a conversation of about 5 KB messages, the same
 * every turn, then the turn's own last message (1 KB, from `turn`'s seed). The `…-turns` scenarios
 * send 32 such turns in rotation, so that what the gateway keeps of a key's last body (its history)
 * is what an agent's next turn would find, not the whole body
 * (`src/shared/http/repeated-members.ts`).
 */
export function chatTurnOfBytes(bytes: number, tokens: number, stream: boolean, turn: number): Record<string, unknown> {
  const history: Record<string, unknown>[] = [{ role: 'system', content: 'You are a coding agent.' }];
  for (let i = 0; JSON.stringify(history).length < bytes - 6_000; i++)
    history.push({ role: i % 2 === 0 ? 'user' : 'assistant', content: fillerText(5_000, 9_000 + i) });
  return {
    model: 'sim-chat',
    messages: [...history, { role: 'user', content: fillerText(1_000, 10_000 + turn) }],
    max_tokens: tokens,
    ignore_eos: true,
    ...(stream ? { stream: true } : {}),
  };
}

/** How many different turns the `…-turns` scenarios send in rotation. */
const TURNS = 32;

/** A JSON schema of `properties` described string fields, about 250 bytes each. */
function schemaOf(seed: number, properties: number): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (let i = 0; i < properties; i++)
    fields[`field_${i}`] = { type: 'string', description: fillerText(200, seed * 100 + i) };
  return { type: 'object', properties: fields, required: ['field_0'], additionalProperties: false };
}

/**
 * Claude Code's shape: 17 tools of about 3.6 KB (61 KB), a 12 KB system prompt, 20 turns with tool
 * calls.
 */
export function claudeCodeMessages(tokens: number): Record<string, unknown> {
  const tools = Array.from({ length: 17 }, (_, i) => ({
    name: `Tool${i}`,
    description: fillerText(1_500, 1_000 + i),
    input_schema: schemaOf(2_000 + i, 8),
  }));
  const messages: Record<string, unknown>[] = [];
  for (let turn = 0; turn < 10; turn++) {
    const id = `toolu_${String(turn).padStart(4, '0')}`;
    messages.push({
      role: 'user',
      content:
        turn === 0
          ? [{ type: 'text', text: fillerText(1_500, 3_000) }]
          : [
              {
                type: 'tool_result',
                tool_use_id: `toolu_${String(turn - 1).padStart(4, '0')}`,
                content: fillerText(2_500, 3_000 + turn),
              },
              { type: 'text', text: fillerText(300, 3_100 + turn) },
            ],
    });
    messages.push({
      role: 'assistant',
      content: [
        { type: 'text', text: fillerText(600, 4_000 + turn) },
        { type: 'tool_use', id, name: `Tool${turn % 16}`, input: { field_0: fillerText(400, 4_100 + turn) } },
      ],
    });
  }
  messages.push({
    role: 'user',
    content: [{ type: 'tool_result', tool_use_id: 'toolu_0009', content: fillerText(2_500, 3_010) }],
  });
  return {
    model: 'sim-chat',
    max_tokens: tokens,
    system: [{ type: 'text', text: fillerText(12_000, 5_000) }],
    tools,
    tool_choice: { type: 'none' },
    messages,
    stream: true,
  };
}

/**
 * Codex's shape: 17 KB of instructions, three function tools, a history of 20 items with calls,
 * `store: false`.
 */
export function codexResponses(tokens: number): Record<string, unknown> {
  const tools = ['shell', 'apply_patch', 'update_plan'].map((name, i) => ({
    type: 'function',
    name,
    description: fillerText(600, 6_000 + i),
    strict: false,
    parameters: schemaOf(6_100 + i, 3),
  }));
  const input: Record<string, unknown>[] = [
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: fillerText(1_500, 7_000) }] },
  ];
  for (let turn = 0; turn < 6; turn++) {
    const callId = `call_${turn}`;
    input.push({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'output_text', text: fillerText(500, 7_100 + turn) }],
    });
    input.push({
      type: 'function_call',
      call_id: callId,
      name: 'shell',
      arguments: JSON.stringify({ field_0: fillerText(200, 7_200 + turn) }),
    });
    input.push({ type: 'function_call_output', call_id: callId, output: fillerText(3_000, 7_300 + turn) });
  }
  input.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: fillerText(300, 7_400) }] });
  return {
    model: 'sim-chat',
    instructions: fillerText(17_000, 8_000),
    input,
    tools,
    tool_choice: 'none',
    max_output_tokens: tokens,
    store: false,
    stream: true,
  };
}

/**
 * The chat stream the gateway sends the engine for a translated body: the direct side of the
 * scenario.
 */
function directChat(chat: Record<string, unknown>, tokens: number) {
  return {
    path: '/v1/chat/completions',
    body: {
      ...chat,
      max_tokens: tokens,
      stream: true,
      stream_options: { include_usage: true, continuous_usage_stats: true },
    },
  };
}

/** The agent scenarios' names, run by `--scenarios agents` (and each by its own name). */
/**
 * Each agent request and the chat request of the same bytes it is judged against (issue 50: within
 * 1.25x). The bench measures the two in the same rounds (bench/measure.ts).
 */
export const SAME_BYTES: Record<string, string> = {
  'messages-claude-code': 'chat-stream-claude-code-bytes',
  'responses-codex': 'chat-stream-codex-bytes',
};

export const AGENT_SCENARIOS = [
  'chat-json-2k',
  'chat-json-50k',
  'chat-json-200k',
  'chat-stream-200k',
  'chat-json-200k-turns',
  'chat-stream-200k-turns',
  'messages-claude-code',
  'chat-stream-claude-code-bytes',
  'responses-codex',
  'chat-stream-codex-bytes',
];

/**
 * The agent scenarios. Each `chat-…-bytes` is a chat stream of exactly the bytes of the agent's
 * request before it, which the floor and Portkey can relay (they cannot translate Messages or
 * Responses).
 *
 * @example
 * const byName = new Map(agentScenarios(64).map((s) => [s.name, s]));
 */
export function agentScenarios(tokens: number): Scenario[] {
  const chat = '/v1/chat/completions';
  const messages = claudeCodeMessages(tokens);
  const responses = codexResponses(tokens);
  const messagesBytes = JSON.stringify(messages).length;
  const responsesBytes = JSON.stringify(responses).length;
  const scenarios: Scenario[] = [
    { name: 'chat-json-2k', path: chat, stream: false, body: chatOfBytes(2_000, tokens, false) },
    { name: 'chat-json-50k', path: chat, stream: false, body: chatOfBytes(50_000, tokens, false) },
    { name: 'chat-json-200k', path: chat, stream: false, body: chatOfBytes(200_000, tokens, false) },
    { name: 'chat-stream-200k', path: chat, stream: true, body: chatOfBytes(200_000, tokens, true) },
    turnsScenario('chat-json-200k-turns', tokens, false),
    turnsScenario('chat-stream-200k-turns', tokens, true),
    {
      name: 'messages-claude-code',
      path: '/v1/messages',
      stream: true,
      body: messages,
      direct: directChat(chatOfMessages(messages), tokens),
    },
    { name: 'chat-stream-claude-code-bytes', path: chat, stream: true, body: chatOfBytes(messagesBytes, tokens, true) },
    {
      name: 'responses-codex',
      path: '/v1/responses',
      stream: true,
      body: responses,
      direct: directChat(chatOfResponses(responses), tokens),
    },
    { name: 'chat-stream-codex-bytes', path: chat, stream: true, body: chatOfBytes(responsesBytes, tokens, true) },
  ];
  return scenarios.map((scenario) => Object.assign(scenario, { onlyWhenNamed: true }));
}

/**
 * 200 KB agent turns sent in rotation (`chatTurnOfBytes`): the same history, a new last message
 * each request.
 */
function turnsScenario(name: string, tokens: number, stream: boolean): Scenario {
  const bodies = Array.from({ length: TURNS }, (_, turn) => chatTurnOfBytes(200_000, tokens, stream, turn));
  return { name, path: '/v1/chat/completions', stream, body: bodies[0]!, bodies };
}
