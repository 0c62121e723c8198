import { GatewayError } from '../../shared/http/errors.js';
import { checkJsonShape } from '../../shared/http/json-shape.js';
import { liftNumberArrays } from './lifted-arrays.js';
import type { EngineResponse } from './upstream.js';

/**
 * An engine's JSON answer as an object. An answer that is not a JSON object (an HTML error page
 * from a proxy, a truncated body) is the engine's fault: 502 `upstream_error` with a fixed message,
 * nothing of the body shown. The arrays of numbers under `liftKey` are kept out of the parse
 * (`liftNumberArrays`): the answer holds a marker in their place, and `restore` puts them back
 * into the text written from it, as bytes.
 *
 * @example
 * const { answer, restore } = await readEngineAnswer(response, 'embedding');
 * const bytes = restore(JSON.stringify(answer));
 */
export async function readEngineAnswer(
  response: EngineResponse,
  liftKey?: string,
): Promise<{ answer: Record<string, unknown>; restore: (written: string) => string | Buffer<ArrayBuffer> }> {
  const bytes = await response.bytes();
  const lifted =
    liftKey === undefined
      ? { text: bytes.toString('utf8'), restore: (written: string) => written }
      : liftNumberArrays(bytes, liftKey);
  const text = lifted.text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new GatewayError('upstream_error', 'The model server sent an answer that is not JSON.', { cause: error });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new GatewayError('upstream_error', 'The model server sent an answer that is not a JSON object.');
  }
  try {
    checkJsonShape(parsed, { storable: false });
  } catch (error) {
    throw new GatewayError('upstream_error', 'The model server sent an answer nested too deeply.', { cause: error });
  }
  return { answer: parsed as Record<string, unknown>, restore: lifted.restore };
}
