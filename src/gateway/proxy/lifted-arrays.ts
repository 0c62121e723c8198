import { randomBytes } from 'node:crypto';

/** One JSON number, exactly as the grammar has it (RFC 8259). */
const NUMBER = String.raw`-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?`;
/**
 * JSON's whitespace: not `\s`, which also takes a vertical tab or a no-break space that JSON
 * refuses.
 */
const SPACE = String.raw`[ \t\n\r]*`;
/** The inside of an array of numbers only (possibly empty), whitespace allowed where JSON allows it. */
const NUMBERS = new RegExp(String.raw`^${SPACE}(?:${NUMBER}(?:${SPACE},${SPACE}${NUMBER})*)?${SPACE}$`);
/**
 * Marks a lifted array in the text parsed and written; the random part keeps any engine's text from
 * forging one.
 */
const NONCE = randomBytes(8).toString('hex');
/** The markers in a written answer, each with its array's index. */
const MARKERS = new RegExp(`"${marker(String.raw`(\d+)`)}"`, 'g');

/** The answer without its bulky arrays, and how to put them back into the answer the gateway writes. */
export interface LiftedAnswer {
  /** The engine's answer as text, each lifted array replaced by a marker string. */
  text: string;
  /** The written answer as bytes, every marker replaced by its array as the engine's bytes had it. */
  restore: (written: string) => Buffer<ArrayBuffer>;
}

/**
 * Takes the arrays of numbers under `key` (an embedding's `"embedding": [...]`) out of an engine's
 * JSON answer, so that parsing and writing it back costs the envelope (ids, order, usage) and not
 * 1,024 floats a vector: each is checked against JSON's number grammar here and relayed byte for
 * byte, never decoded into a string nor encoded again (CONTRIBUTING, "Measured on the request
 * path"). The key cannot match inside a JSON string (its quotes would be escaped there); an array
 * that is not numbers only is left in place, and an answer that already holds a marker is left
 * whole.
 *
 * The search runs on a latin1 view of the bytes (one character a byte, so its offsets are the
 * bytes'): UTF-8 writes every character beyond ASCII with bytes above 0x7f only, so an ASCII match
 * there is the same match in the UTF-8 text, and an array holding anything else fails the number
 * check and stays in the envelope.
 *
 * @example
 * const lifted = liftNumberArrays(bytes, 'embedding');
 * const answer = JSON.parse(lifted.text); // data[i].embedding is a marker string
 * const written = lifted.restore(JSON.stringify(answer)); // a Buffer, the vectors as the engine sent them
 */
export function liftNumberArrays(bytes: Buffer, key: string): LiftedAnswer {
  const view = bytes.toString('latin1');
  if (view.includes(NONCE)) return whole(bytes);
  const arrays: Buffer[] = [];
  const opener = new RegExp(String.raw`"${key}"${SPACE}:${SPACE}\[`, 'g');
  let text = '';
  let from = 0;
  for (let match = opener.exec(view); match !== null; match = opener.exec(view)) {
    const start = match.index + match[0].length;
    const end = view.indexOf(']', start);
    if (end < 0) break;
    if (!NUMBERS.test(view.slice(start, end))) continue;
    // Both ends are ASCII (the key's opening quote, the array's closing bracket): no character is
    // cut in two.
    text += `${bytes.toString('utf8', from, start - 1)}"${marker(arrays.length)}"`;
    arrays.push(bytes.subarray(start - 1, end + 1));
    from = end + 1;
    opener.lastIndex = from;
  }
  if (arrays.length === 0) return whole(bytes);
  text += bytes.toString('utf8', from);
  return { text, restore: (written) => restored(written, arrays) };
}

function whole(bytes: Buffer): LiftedAnswer {
  return { text: bytes.toString('utf8'), restore: (written) => Buffer.from(written, 'utf8') };
}

/**
 * The written envelope's pieces between markers, each encoded, with the arrays' own bytes between
 * them: one copy.
 */
function restored(written: string, arrays: Buffer[]): Buffer<ArrayBuffer> {
  const pieces: Buffer[] = [];
  let from = 0;
  MARKERS.lastIndex = 0;
  for (let match = MARKERS.exec(written); match !== null; match = MARKERS.exec(written)) {
    pieces.push(Buffer.from(written.slice(from, match.index), 'utf8'), arrays[Number(match[1])]!);
    from = match.index + match[0].length;
  }
  pieces.push(Buffer.from(written.slice(from), 'utf8'));
  return Buffer.concat(pieces);
}

function marker(index: number | string): string {
  return `lifted:${NONCE}:${index}`;
}
