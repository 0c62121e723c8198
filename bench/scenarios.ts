/** One kind of request the benches send: a route, whether it streams, and its body. */
export interface Scenario {
  name: string;
  path: string;
  stream: boolean;
  body: Record<string, unknown>;
}

/**
 * The benches' three scenarios: chat JSON and chat stream of `tokens` tokens, and embeddings of four inputs.
 *
 * @example
 * const [chatJson] = allScenarios(64);
 */
export function allScenarios(tokens: number): Scenario[] {
  // ignore_eos makes the simulator produce exactly max_tokens, as a real load test on vLLM would.
  const chat = { model: 'sim-chat', messages: [{ role: 'user', content: 'Write a short note about toll roads.' }], max_tokens: tokens, ignore_eos: true };
  const input = ['The quick brown fox.', 'Jumps over the lazy dog.', 'Toll roads charge per use.', 'Gateways meter every request.'];
  return [
    { name: 'chat-json', path: '/v1/chat/completions', stream: false, body: chat },
    { name: 'chat-stream', path: '/v1/chat/completions', stream: true, body: { ...chat, stream: true } },
    { name: 'embeddings', path: '/v1/embeddings', stream: false, body: { model: 'sim-embed', input } },
  ];
}
