import { randomBytes } from 'node:crypto';

/** One JSON number, exactly as the grammar has it (RFC 8259). */
const NUMBER = String.raw`-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?`;
/** JSON's whitespace: not `\s`, which also takes a vertical tab or a no-break space that JSON refuses. */
const SPACE = String.raw`[ \t\n\r]*`;
/** The inside of an array of numbers only (possibly empty), whitespace allowed where JSON allows it. */
const NUMBERS = new RegExp(String.raw`^${SPACE}(?:${NUMBER}(?:${SPACE},${SPACE}${NUMBER})*)?${SPACE}$`);
/** Marks a lifted array in the text parsed and written; the random part keeps any engine's text from forging one. */
const NONCE = randomBytes(8).toString('hex');

/** The text without its bulky arrays, and how to put them back into the text the gateway writes. */
export interface LiftedText {
  /** The engine's text with each lifted array replaced by a marker string. */
  text: string;
  /** The written answer with every marker replaced by its array, as the engine sent it. */
  restore: (written: string) => string;
}

/**
 * Takes the arrays of numbers under `key` (an embedding's `"embedding": [...]`) out of a JSON text, so that
 * parsing and writing the answer back costs the envelope (ids, order, usage) and not 1,024 floats a vector:
 * each is checked against JSON's number grammar here and relayed byte for byte. The key cannot match inside a
 * JSON string (its quotes would be escaped there); an array that is not numbers only is left in place, and a
 * text that already holds a marker is left whole.
 *
 * @example
 * const lifted = liftNumberArrays(text, 'embedding');
 * const answer = JSON.parse(lifted.text); // data[i].embedding is a marker string
 * const written = lifted.restore(JSON.stringify(answer));
 */
export function liftNumberArrays(text: string, key: string): LiftedText {
  const arrays: string[] = [];
  const opener = new RegExp(String.raw`"${key}"${SPACE}:${SPACE}\[`, 'g');
  let out = '';
  let from = 0;
  if (text.includes(NONCE)) return { text, restore: (written) => written };
  for (let match = opener.exec(text); match !== null; match = opener.exec(text)) {
    const start = match.index + match[0].length;
    const end = text.indexOf(']', start);
    if (end < 0) break;
    const inside = text.slice(start, end);
    if (!NUMBERS.test(inside)) continue;
    out += `${text.slice(from, start - 1)}"${marker(arrays.length)}"`;
    arrays.push(inside);
    from = end + 1;
    opener.lastIndex = from;
  }
  if (arrays.length === 0) return { text, restore: (written) => written };
  out += text.slice(from);
  const markers = new RegExp(`"${marker(String.raw`(\d+)`)}"`, 'g');
  return { text: out, restore: (written) => written.replace(markers, (_, index: string) => `[${arrays[Number(index)]}]`) };
}

function marker(index: number | string): string {
  return `lifted:${NONCE}:${index}`;
}
