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
  /** Whether a choice of a chunk carries generated tokens; default: chat's delta (completions' chunks carry `text`). */
  carriesTokens?: (choice: Record<string, unknown>) => boolean;
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
  const clientModelJson = JSON.stringify(options.clientModel);
  const tokensIn = options.carriesTokens ?? carriesTokens;

  const rewrite = (data: string): string | null => {
    const usual = USUAL_CHUNK.exec(data);
    if (usual) {
      const rewritten = rewriteUsual(usual, state, options, clientModelJson);
      if (rewritten !== null) return rewritten;
    }
    let chunk: Record<string, unknown>;
    try {
      chunk = JSON.parse(data) as Record<string, unknown>;
    } catch {
      return null; // not JSON: nothing a client could use
    }
    if (chunk.error !== undefined) {
      state.failed = true;
      return JSON.stringify(
        envelopeOf(
          new GatewayError(
            'upstream_error',
            'The model server failed while generating this response; the output is incomplete.',
          ),
        ),
      );
    }
    const choices = Array.isArray(chunk.choices) ? (chunk.choices as Array<Record<string, unknown>>) : [];
    const usage = usageFrom(chunk.usage);
    if (usage) state.usage = usage;
    let hidden: string | undefined;
    if (choices.length === 0 && usage) {
      state.usageFinal = true;
      if (!options.includeUsage) return null;
    } else {
      if (choices.some(tokensIn)) {
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

/** A JSON string as JSON allows it (no raw control characters, only JSON's escapes), and a JSON integer of at most 16 digits. */
const STRING = String.raw`"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"`;
const INTEGER = String.raw`(?:0|[1-9]\d{0,15})`;

/**
 * vLLM's usual chunk, field for field, as its compact JSON reads: one
 * choice whose delta is one piece of text, no null OpenAI does not send, and
 * running usage or none. Nearly every chunk of a stream is one; the first
 * (with the role) and the last (with the finish reason) are not.
 */
const USUAL_CHUNK = new RegExp(
  `^\\{"id":(${STRING}),"object":"chat\\.completion\\.chunk","created":(${INTEGER}),"model":${STRING},` +
    `"choices":\\[\\{"index":0,"delta":\\{"(content|reasoning|reasoning_content)":(${STRING})\\},"logprobs":null,"finish_reason":null\\}\\]` +
    `(?:,"usage":\\{"prompt_tokens":(${INTEGER}),"total_tokens":(${INTEGER}),"completion_tokens":(${INTEGER})\\})?\\}$`,
);

/**
 * A usual chunk for the client, written from the pieces the pattern found,
 * without parsing and writing the whole chunk again (most of a stream's own
 * CPU, docs/benchmark.md#cpu-per-request). It gives what the general path
 * gives, byte for byte but for string escapes kept as the engine wrote them.
 * Null when the usage is not one this path can read exactly: the general path decides then.
 */
function rewriteUsual(
  match: RegExpExecArray,
  state: ChatStreamState,
  options: ChatStreamOptions,
  clientModelJson: string,
): string | null {
  const [, id, created, key, text, prompt, total, completion] = match;
  let usageText = '';
  if (prompt !== undefined) {
    const usage = { promptTokens: Number(prompt), completionTokens: Number(completion) };
    if (
      !Number.isSafeInteger(usage.promptTokens) ||
      !Number.isSafeInteger(usage.completionTokens) ||
      !Number.isSafeInteger(Number(total))
    )
      return null;
    state.usage = usage;
    if (options.continuousUsage)
      usageText = `,"usage":{"prompt_tokens":${prompt},"total_tokens":${total},"completion_tokens":${completion}}`;
  }
  if (text !== '""') {
    state.tokenChunks += 1;
    state.firstTokenAt ??= performance.now();
  }
  return `{"id":${id},"object":"chat.completion.chunk","created":${created},"model":${clientModelJson},"choices":[{"index":0,"delta":{"${key}":${text}},"logprobs":null,"finish_reason":null}]${usageText}}`;
}

function carriesTokens(choice: Record<string, unknown>): boolean {
  const delta = choice.delta as Record<string, unknown> | undefined;
  if (!delta) return false;
  return Boolean(delta.content || delta.reasoning || delta.reasoning_content || delta.tool_calls);
}
