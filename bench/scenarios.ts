import { agentScenarios } from './agent-scenarios.js';

/** One kind of request the benches send: a route, whether it streams, and its body. */
export interface Scenario {
  name: string;
  path: string;
  stream: boolean;
  body: Record<string, unknown>;
  /**
   * Several bodies sent in rotation, one a request, to the gateway and straight alike (`body` is
   * the first).
   */
  bodies?: Record<string, unknown>[];
  /**
   * What the simulator is sent for the same work when the load goes straight to it, when that
   * differs: the Messages route is the gateway's own (translated to chat completions), so its
   * direct side is the chat request the gateway makes of it. A relay that passes bytes through (the
   * floor, Portkey) cannot run such a scenario.
   */
  direct?: { path: string; body: Record<string, unknown> };
  /**
   * Run only when `--scenarios` names it (or `agents`): the agent-sized bodies of
   * bench/agent-scenarios.ts.
   */
  onlyWhenNamed?: boolean;
}

/**
 * The benches' scenarios: chat JSON and chat stream of `tokens` tokens, embeddings of four inputs,
 * and a Messages stream and a Responses stream of `tokens` tokens (the simulator must answer
 * `tokens` tokens by default: neither request has `ignore_eos`; `--default-max-tokens`).
 *
 * @example
 * const [chatJson] = allScenarios(64);
 */
export function allScenarios(tokens: number): Scenario[] {
  // ignore_eos makes the simulator produce exactly max_tokens, as a real load test on vLLM would.
  const chat = {
    model: 'sim-chat',
    messages: [{ role: 'user', content: 'Write a short note about toll roads.' }],
    max_tokens: tokens,
    ignore_eos: true,
  };
  const input = [
    'The quick brown fox.',
    'Jumps over the lazy dog.',
    'Toll roads charge per use.',
    'Gateways meter every request.',
  ];
  return [
    { name: 'chat-json', path: '/v1/chat/completions', stream: false, body: chat },
    { name: 'chat-stream', path: '/v1/chat/completions', stream: true, body: { ...chat, stream: true } },
    { name: 'embeddings', path: '/v1/embeddings', stream: false, body: { model: 'sim-embed', input } },
    {
      name: 'messages-stream',
      path: '/v1/messages',
      stream: true,
      body: { model: 'sim-chat', max_tokens: tokens, messages: chat.messages, stream: true },
      // What the gateway sends the engine for it (requests/messages/): a chat stream with usage in
      // every chunk.
      direct: {
        path: '/v1/chat/completions',
        body: {
          model: 'sim-chat',
          max_tokens: tokens,
          messages: chat.messages,
          stream: true,
          stream_options: { include_usage: true, continuous_usage_stats: true },
        },
      },
    },
    {
      name: 'responses-stream',
      path: '/v1/responses',
      stream: true,
      // store: false, as Codex sends it: a stored response adds a database write (docs/benchmark.md
      // gives both).
      body: { model: 'sim-chat', max_output_tokens: tokens, input: chat.messages, stream: true, store: false },
      // What the gateway sends the engine for it (requests/responses/): the same chat stream as for
      // Messages.
      direct: {
        path: '/v1/chat/completions',
        body: {
          model: 'sim-chat',
          messages: chat.messages,
          max_tokens: tokens,
          stream: true,
          stream_options: { include_usage: true, continuous_usage_stats: true },
        },
      },
    },
    {
      name: 'responses-stored-stream',
      path: '/v1/responses',
      stream: true,
      // The API's default, store: true: the response and its input are written to the gateway's
      // database before the last event.
      body: { model: 'sim-chat', max_output_tokens: tokens, input: chat.messages, stream: true },
      direct: {
        path: '/v1/chat/completions',
        body: {
          model: 'sim-chat',
          messages: chat.messages,
          max_tokens: tokens,
          stream: true,
          stream_options: { include_usage: true, continuous_usage_stats: true },
        },
      },
    },
    ...agentScenarios(tokens),
  ];
}
