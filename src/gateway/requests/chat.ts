import { createChatChunkRewriter } from '../proxy/chat-stream.js';
import type { TokenUsage } from '../billing/token-usage.js';
import { estimateCompletionTokens, estimatePromptTokens } from '../proxy/token-counts.js';
import type { AuthorizedRequest } from './admission.js';
import type { BilledEndpoint, ProtocolCall, StreamWriter } from './endpoint.js';
import { validateChatRequest } from './validate.js';

type Json = Record<string, unknown>;

/**
 * Chat completions, JSON or SSE. The body goes upstream unchanged but for the
 * model's served name and, on streams, usage reporting switched on: the
 * gateway always asks the engine for its final and running usage, so any
 * stream, even one cut short, is billed from the engine's count.
 */
export const CHAT: BilledEndpoint = {
  name: 'chat.completions',
  task: 'chat',
  path: '/chat/completions',
  validate: (body, config) => validateChatRequest(body, config.maxChoices),
  begin: (request) =>
    openAiCall(request, {
      bounded: request.body,
      estimate: (answer) => ({
        promptTokens: estimatePromptTokens(request.body.messages),
        completionTokens: answer ? estimateCompletionTokens(answer.choices) : 0,
      }),
    }),
};

/** What differs between the OpenAI-style protocols (chat and completions) that `openAiCall` begins. */
export interface OpenAiKind {
  /** What the token bounds read of the body (chat: the body itself). */
  bounded: Json;
  estimate: (answer: Json | null) => TokenUsage;
  /** Whether a choice of a stream's chunk carries generated tokens; default: chat's delta. */
  carriesTokens?: (choice: Json) => boolean;
}

/**
 * A call of an OpenAI-style protocol: the client's body goes to the engine as it came (its bytes are what the engine
 * is sent, but for the model's name and the usage options), and a stream's chunks are relayed one by one, showing the
 * client usage only where it asked for it.
 */
export function openAiCall(request: AuthorizedRequest, kind: OpenAiKind): ProtocolCall {
  const body = request.body;
  return {
    bounded: kind.bounded,
    sentBytes: request.bodyBytes,
    bodyFor: (target) => openAiUpstreamBody(body, target.servedModelName),
    estimate: kind.estimate,
    stream: body.stream === true ? () => chunkWriter(request, kind.carriesTokens) : null,
  };
}

function clientStreamOptions(body: Json): Json {
  return (body.stream_options ?? {}) as Json;
}

/** The body for the engine: the client's, naming the replica's model, and on streams asking for final and running usage. */
export function openAiUpstreamBody(client: Json, servedModelName: string): Json {
  const body: Json = { ...client, model: servedModelName };
  // Object.assign rather than a spread followed by new properties, which V8 (Node 20) makes slow (CONTRIBUTING, "Measured on the request path").
  if (client.stream === true)
    body.stream_options = Object.assign({}, clientStreamOptions(client), {
      include_usage: true,
      continuous_usage_stats: true,
    });
  return body;
}

function chunkWriter(request: AuthorizedRequest, carriesTokens: OpenAiKind['carriesTokens']): StreamWriter {
  const asked = clientStreamOptions(request.body);
  const rewriter = createChatChunkRewriter({
    clientModel: request.clientModel,
    includeUsage: asked.include_usage === true,
    continuousUsage: asked.continuous_usage_stats === true,
    carriesTokens,
  });
  return { state: rewriter.state, rewrite: rewriter.rewrite, cacheable: true };
}
