import { clampUsage } from '../billing/token-bounds.js';
import type { TokenUsage } from '../billing/token-usage.js';
import { withoutNullFields } from '../proxy/openai-shape.js';
import { shownUsage } from '../proxy/shown-usage.js';
import { usageFrom } from '../proxy/token-counts.js';
import { type EngineResponse, readEngineAnswer } from '../proxy/upstream.js';
import type { BilledCall } from './authorize.js';
import type { BilledEndpoint, ProtocolCall } from './endpoint.js';

/**
 * The engine's JSON answer as its client is answered: the client's model name, the protocol's shape
 * (a Response, a Message) with the usage it is billed, written once. `written` is a string, or
 * bytes when arrays were lifted (their bytes are the engine's, never decoded). A batch line's
 * result is this answer (`batches/line-run.ts`).
 */
export async function answeredJson(
  response: EngineResponse,
  endpoint: BilledEndpoint,
  protocol: ProtocolCall,
  call: BilledCall,
): Promise<{ usage: TokenUsage; reported: boolean; written: string | Buffer<ArrayBuffer> }> {
  const { answer, restore } = await readEngineAnswer(response, endpoint.liftArrays);
  call.upstreamDoneAt = performance.now();
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
