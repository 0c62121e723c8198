import type { Config } from '../../config/types.js';
import { clientBodyForEngine } from '../proxy/client-body.js';
import type { TokenUsage } from '../billing/token-usage.js';
import type { TokenBounds } from '../billing/token-bounds.js';
import { estimateCompletionTokens, estimatePromptTokens } from '../proxy/token-counts.js';
import type { AuthorizedRequest } from './authorize.js';
import { chatStreamWriter } from './chat-stream.js';
import type { BilledEndpoint, ProtocolCall } from './endpoint.js';
import { streamedFromEngine } from './engine-stream.js';
import type { StreamWriter } from './stream-writer.js';
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
  begin: (request, deps) =>
    openAiCall(request, deps.config, {
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
}

/**
 * A call of an OpenAI-style protocol: the client's body goes to the engine as it came (its own
 * bytes, but for the model's name and the usage options where they change: `clientBodyForEngine`),
 * and a stream's chunks are relayed one by one, showing the client usage only where it asked for
 * it.
 */
export function openAiCall(
  request: AuthorizedRequest,
  config: Pick<Config, 'streamCheckpoint'>,
  kind: OpenAiKind,
): ProtocolCall {
  const body = request.body;
  const streamed = streamedFromEngine(request, config, kind.bounded);
  return {
    bounded: kind.bounded,
    sentBytes: request.bodyBytes,
    bodyFor: (target) => clientBodyForEngine(request.rawBody, body, target.servedModelName, streamed),
    estimate: kind.estimate,
    stream: body.stream === true ? (bounds) => chunkWriter(request, bounds) : null,
  };
}

function clientStreamOptions(body: Json): Json {
  return (body.stream_options ?? {}) as Json;
}

function chunkWriter(request: AuthorizedRequest, bounds: TokenBounds): StreamWriter {
  const asked = clientStreamOptions(request.body);
  return chatStreamWriter({
    clientModel: request.clientModel,
    includeUsage: asked.include_usage === true,
    continuousUsage: asked.continuous_usage_stats === true,
    bounds,
  });
}
