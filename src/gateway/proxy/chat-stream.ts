import { envelopeOf, GatewayError } from '../../shared/http/errors.js';
import { withoutNullFields } from './openai-shape.js';
import { type TokenUsage, usageFrom } from './usage.js';

export interface ChatStreamOptions {
  /** The model as the client named it; every chunk says this. */
  clientModel: string;
  /** The client asked for the final usage chunk (`stream_options.include_usage: true`). */
  includeUsage: boolean;
  /** The client asked for usage on every chunk (`stream_options.continuous_usage_stats: true`). */
  continuousUsage: boolean;
}

/** What the gateway learnt from a chat stream, read when it ends. */
export interface ChatStreamState {
  /** The engine's latest usage: final when `usageFinal`, else the running count of a cut stream. */
  usage: TokenUsage | null;
  usageFinal: boolean;
  /** Chunks that carried generated text, the fallback count when no usage arrived at all. */
  tokenChunks: number;
  firstTokenAt: number | null;
  /** The engine sent an error event inside the stream. */
  failed: boolean;
}

/**
 * Rewrites one chat chunk for the client. The gateway always asks the engine
 * for usage (final and running) so it can bill any stream, even one cut short;
 * the client sees usage only where it asked for it.
 *
 * @example
 * const rewriter = createChatChunkRewriter({ clientModel: 'qwen', includeUsage: false, continuousUsage: false });
 * rewriter.rewrite('{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}'); // null (dropped)
 * rewriter.state.usage; // { promptTokens: 3, completionTokens: 2 }
 */
export function createChatChunkRewriter(options: ChatStreamOptions) {
  const state: ChatStreamState = { usage: null, usageFinal: false, tokenChunks: 0, firstTokenAt: null, failed: false };

  const rewrite = (data: string): string | null => {
    let chunk: Record<string, unknown>;
    try {
      chunk = JSON.parse(data) as Record<string, unknown>;
    } catch {
      return null; // not JSON: nothing a client could use
    }
    if (chunk.error !== undefined) {
      state.failed = true;
      return JSON.stringify(envelopeOf(new GatewayError('upstream_error', 'The model server failed while generating this response; the output is incomplete.')));
    }
    const choices = Array.isArray(chunk.choices) ? (chunk.choices as Array<{ delta?: Record<string, unknown> }>) : [];
    const usage = usageFrom(chunk.usage);
    if (usage) state.usage = usage;
    let hidden: string | undefined;
    if (choices.length === 0 && usage) {
      state.usageFinal = true;
      if (!options.includeUsage) return null;
    } else {
      if (choices.some(carriesTokens)) {
        state.tokenChunks += 1;
        state.firstTokenAt ??= performance.now();
      }
      if (!options.continuousUsage) hidden = 'usage';
    }
    chunk.model = options.clientModel;
    return JSON.stringify(withoutNullFields(chunk, hidden));
  };

  return { rewrite, state };
}

function carriesTokens(choice: { delta?: Record<string, unknown> }): boolean {
  const delta = choice.delta;
  if (!delta) return false;
  return Boolean(delta.content || delta.reasoning || delta.reasoning_content || delta.tool_calls);
}
