import { type StreamState, streamSettlement } from '../billing/settlement.js';
import type { RunningStream } from '../billing/stream-checkpoints.js';
import { clampUsage } from '../billing/token-bounds.js';
import type { TokenUsage } from '../billing/token-usage.js';
import type { UpstreamTarget } from '../engines/types.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { CallAbort } from '../proxy/call-abort.js';
import { UpstreamError } from '../proxy/upstream-failure.js';
import { withoutNullFields } from '../proxy/openai-shape.js';
import { readSseData, STREAM_CUT_MESSAGE } from '../proxy/sse.js';
import { shownUsage } from '../proxy/shown-usage.js';
import { usageFrom } from '../proxy/token-counts.js';
import { readEngineAnswer } from '../proxy/engine-answer.js';
import type { EngineResponse } from '../proxy/upstream.js';
import type { BilledCall } from './authorize.js';
import { settle, streamCheckpoints } from './billed-call.js';
import { type EngineCallInputs, sendToEngine } from './engine-call.js';
import type { BilledDeps, BilledEndpoint, ProtocolCall } from './endpoint.js';
import { readEngineChunks } from './stream-writer.js';
import { StreamedAnswer } from './streamed-answer.js';

/**
 * A JSON call's answer as the engine's stream builds it: what it is billed if cut at any point
 * (`assembled.state`, the engine's running count, as a stream is billed: `settleCut`), checkpointed
 * in the charge journal as it grows, as a stream is (a replica killed mid-answer still bills it).
 */
export interface JsonRelay {
  assembled: StreamedAnswer;
  checkpoints: { saw(stream: RunningStream): void; drop(): void };
  /** The call's abort: why a read that broke off ended (the timeout, a stop, the client gone). */
  abort: CallAbort;
}

/** A JSON call's relay, made once the engine answers (its replica's kind says its answer's shape). */
function jsonRelay(
  deps: BilledDeps,
  call: BilledCall,
  protocol: ProtocolCall,
  target: UpstreamTarget,
  abort: CallAbort,
): JsonRelay {
  return {
    abort,
    assembled: new StreamedAnswer((target.engineKind ?? 'vllm') === 'vllm'),
    checkpoints: laterCheckpoints(
      deps,
      call,
      streamCheckpoints(deps, call, () => protocol.estimate(null).promptTokens),
    ),
  };
}

/**
 * A JSON call's checkpoints begin one checkpoint in (`TOLLGATE_STREAM_CHECKPOINT_TOKENS`), not at
 * its first token as a stream's do: most JSON answers are shorter, and each would otherwise cost a
 * journal write more than it did before it was streamed from the engine. A replica killed before
 * then bills the call nothing, as it did every JSON call before. `drop` forgets them, for an
 * attempt billed nothing (its engine broke off).
 */
function laterCheckpoints(
  deps: BilledDeps,
  call: BilledCall,
  checkpoints: Pick<JsonRelay['checkpoints'], 'saw'>,
): JsonRelay['checkpoints'] {
  const first = deps.config.streamCheckpoint.everyTokens;
  return {
    saw: (stream) => {
      if (stream.tokenChunks >= first || (stream.usage?.completionTokens ?? 0) >= first) checkpoints.saw(stream);
    },
    drop: () => deps.journal.dropCheckpoint(call.requestId),
  };
}

/** An engine's JSON answer read whole, before it is written for its receiver (`writtenJson`). */
export interface EngineJson {
  answer: Record<string, unknown>;
  /** Puts lifted arrays back into the text written from `answer` (`readEngineAnswer`). */
  restore: (written: string) => string | Buffer<ArrayBuffer>;
}

const AS_WRITTEN = (written: string) => written;

/**
 * A JSON call sent to the engine (`sendToEngine`) and its answer read whole there, inside failover:
 * nothing of it reaches its receiver before its end, so an engine whose answer breaks off or fails
 * mid-answer is replaced by another replica, as one that fails before answering is, and the
 * attempt it broke is billed nothing (docs/decisions.md). An engine that streams (every protocol
 * but embeddings asks it to) is read chunk by chunk into a relay (each attempt its own, handed to
 * `attempt`: what a cut call is billed; undefined once its engine broke it off), and its answer
 * assembled from the chunks.
 *
 * @example
 * const { target, read } = await sendJson(deps, call, protocol, endpoint, { path, abort }, (r) => (relay = r));
 */
export async function sendJson(
  deps: BilledDeps,
  call: BilledCall,
  protocol: ProtocolCall,
  endpoint: BilledEndpoint,
  inputs: EngineCallInputs,
  attempt: (relay: JsonRelay | undefined) => void,
): Promise<{ target: UpstreamTarget; read: EngineJson }> {
  let read: EngineJson | undefined;
  const readWhole = async (response: EngineResponse, target: UpstreamTarget) => {
    call.answeredAt = performance.now();
    if (!response.eventStream) {
      // A body that breaks off is the engine's, as a stream's is; one that is not JSON is not
      // retried.
      read = await readEngineAnswer(response, endpoint.liftArrays).catch((error: unknown) => {
        throw error instanceof GatewayError ? error : brokenOff(inputs.abort, error);
      });
      return;
    }
    const relay = jsonRelay(deps, call, protocol, target, inputs.abort);
    attempt(relay);
    try {
      read = { answer: await assembledAnswer(response, relay), restore: AS_WRITTEN };
    } catch (error) {
      // Broken off by the engine: billed nothing, whatever comes next.
      if (error instanceof UpstreamError) attempt(undefined);
      throw error;
    }
  };
  const { target } = await sendToEngine(deps, call, protocol, { ...inputs, readWhole });
  call.upstreamDoneAt = performance.now();
  return { target, read: read! };
}

/**
 * The engine's JSON answer as its client is answered: the client's model name, the protocol's shape
 * (a Response, a Message) with the usage it is billed, written once. `written` is a string, or
 * bytes when arrays were lifted (their bytes are the engine's, never decoded). A batch line's
 * result is this answer (`batches/line-run.ts`).
 */
export async function writtenJson(
  { answer, restore }: EngineJson,
  endpoint: BilledEndpoint,
  protocol: ProtocolCall,
  call: BilledCall,
): Promise<{ usage: TokenUsage; reported: boolean; written: string | Buffer<ArrayBuffer> }> {
  answer.model = call.clientModel;
  endpoint.shapeAnswer?.(answer);
  const { usage, reported } = usageShownAsBilled(answer, protocol, call);
  const answered = protocol.answerOf ? await protocol.answerOf(answer) : withoutNullFields(answer);
  return { usage, reported, written: restore(JSON.stringify(answered)) };
}

/**
 * A JSON answer's usage: the engine's, or the estimate when it reported none valid. The client is
 * shown what it is billed for (held to the request's bounds, as `chargeFor` holds it), on every
 * protocol: the answer's usage member is rewritten only where the engine's says anything else.
 */
export function usageShownAsBilled(
  answer: Record<string, unknown>,
  protocol: ProtocolCall,
  call: BilledCall,
): { usage: TokenUsage; reported: boolean } {
  const reported = usageFrom(answer.usage);
  const usage = reported ?? protocol.estimate(answer);
  const shown = shownUsage(answer.usage, clampUsage(usage, call.bounds).usage);
  if (shown) answer.usage = shown;
  return { usage, reported: reported !== null };
}

/**
 * The engine's stream read to its end into `relay`, each chunk checkpointed when one is due; its
 * answer as the engine would have written it in JSON. An engine that fails mid-answer (its error
 * event, or its stream broken off) is the engine's fault: an `UpstreamError`, which another replica
 * may answer in its place, the attempt's checkpoints dropped; an abort (the client gone, the
 * timeout, a stop) is thrown as it came.
 */
async function assembledAnswer(response: EngineResponse, relay: JsonRelay): Promise<Record<string, unknown>> {
  const { assembled, checkpoints } = relay;
  const read = readEngineChunks(assembled);
  try {
    await readSseData(response.body, (data) => {
      read(data);
      checkpoints.saw(assembled.state);
    });
  } catch (error) {
    if (!relay.abort.aborted) checkpoints.drop();
    throw brokenOff(relay.abort, error);
  }
  if (assembled.state.failed) {
    checkpoints.drop();
    throw new UpstreamError(
      'status',
      'upstream_error',
      'The model server failed while generating this response; the output is incomplete.',
    );
  }
  return assembled.answer();
}

/**
 * Why a JSON call's read of the engine's stream broke off, as the client is told: the upstream
 * timeout as it is told before the engine answers (504), a stop as its reason, else the engine's
 * stream cut (502, another replica may answer: its connection lost, it is taken out of rotation
 * until its health check passes, as one unreachable is).
 */
function brokenOff(abort: CallAbort, error: unknown): unknown {
  if (!abort.aborted) return new UpstreamError('unreachable', 'upstream_error', STREAM_CUT_MESSAGE, { cause: error });
  const reason: unknown = abort.reason;
  if (reason instanceof Error && reason.name === 'TimeoutError')
    return new GatewayError('upstream_error', 'The model server did not answer in time. Retry later.', {
      status: 504,
      cause: error,
    });
  return reason ?? error;
}

/**
 * A JSON call the upstream timeout cut after its engine began answering: billed what the engine
 * generated by then, as a stream cut short is, with the 504 its client was answered.
 */
export async function settleTimedOut(
  deps: BilledDeps,
  call: BilledCall,
  promptTokens: number,
  engine: StreamState,
): Promise<TokenUsage> {
  const settlement = {
    ...streamSettlement(engine, 'upstream_failed', () => promptTokens, null),
    status: 504,
    streamed: false,
  };
  await settle(deps, call, settlement);
  return settlement.usage;
}
