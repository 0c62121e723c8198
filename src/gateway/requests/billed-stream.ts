import type { Context } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { headersWithFirstChunk } from '../../shared/http/request.js';
import { streamSettlement } from '../billing/settlement.js';
import { relaySse } from '../proxy/sse.js';
import type { EngineResponse } from '../proxy/upstream.js';
import { type BilledCall, keepsAnswer, settle, streamCheckpoints } from './billed-call.js';
import { SSE_HEADERS } from './cached-answer.js';
import type { BilledDeps, StreamControls } from './endpoint.js';
import { readEngineChunks, type StreamWriter } from './stream-writer.js';

/**
 * What `relayBilledStream` relays: one billed call's engine stream, and the protocol's writer of
 * it.
 */
export interface BilledStream {
  c: Context<GatewayEnv>;
  deps: BilledDeps;
  call: BilledCall;
  /** The engine's answer: its SSE body, and its own count of the prompt where it can give one. */
  response: EngineResponse;
  controls: StreamControls;
  /**
   * The protocol's writer (`stream-writer.ts`): it writes the events; the relay reads, counts and
   * bills.
   */
  writer: StreamWriter;
  /** The prompt's estimate, for a stream the engine reported no usage for. */
  promptEstimate: () => number;
}

/**
 * Relays a billed stream, whatever its protocol (its `StreamWriter` writes its events,
 * `readEngineChunks` reads the engine's chunks), and settles it when it ends: billed by
 * `streamSettlement` (`billing/settlement.ts`), before the client reads its last byte.
 */
export function relayBilledStream(stream: BilledStream): Response {
  const { c, deps, call, response, controls, writer, promptEstimate } = stream;
  // The events as the client got them, only when the key keeps or caches answers (a stream that is
  // not cacheable, only when the key keeps them and caches nothing: a kept stream is also cached).
  const delivered: string[] | null = keepsAnswer(call) && (writer.cacheable || !call.caller.responseCache) ? [] : null;
  // The running usage, appended to the charge journal as it grows: a replica killed mid-stream
  // still bills it.
  const checkpoints = streamCheckpoints(deps, call, promptEstimate);
  const rewrite = readEngineChunks(writer);
  const relayed = relaySse({
    upstream: response.body,
    onData: (data) => {
      const forwarded = rewrite(data);
      checkpoints.saw(writer.state);
      if (forwarded !== null) delivered?.push(forwarded);
      return forwarded;
    },
    abortUpstream: controls.abort,
    events: writer.events,
    onEnd: async (outcome) => {
      controls.release();
      const last = writer.ended ? await writer.ended(outcome) : null;
      if (last !== null) delivered?.push(last);
      // With no count from the engine, its own count of the prompt it was sent (template and tools
      // included) where it can give one (`engines/prompt-count.ts`), else the estimate.
      const counted = writer.state.usage ? null : await response.countPrompt?.();
      const prompt = typeof counted === 'number' ? () => counted : promptEstimate;
      await settle(deps, call, streamSettlement(writer.state, outcome, prompt, delivered));
    },
  });
  // Under load the headers wait for the first chunk, one socket write fewer; alone, they leave at
  // once, so the client reads them while the engine makes its first token (at one connection that
  // is worth more than a write).
  if (deps.inFlight.size > 1) headersWithFirstChunk(c);
  return c.body(relayed, 200, SSE_HEADERS);
}
