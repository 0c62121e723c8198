/**
 * One member of a JSON object as written: its key, and where `"key": value` starts and ends in the
 * bytes.
 */
export interface JsonMember {
  key: string;
  start: number;
  end: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

/**
 * The top-level members of a JSON object's bytes, in the order written (duplicates included),
 * without parsing the values: strings are skipped by their closing quote (`Buffer.indexOf`, native,
 * for long ones), nested values by their brackets. The bytes must be JSON already known valid
 * (`JSON.parse` accepted them) and an object: what this reads of anything else is undefined.
 * UTF-8's multi-byte characters never hold a quote, bracket or backslash byte, so offsets are byte
 * offsets and no character is decoded but the keys.
 *
 * @example
 * topLevelMembers(Buffer.from('{"model":"m","n":2}')); // [{ key: 'model', start: 1, end: 12 }, { key: 'n', start: 13, end: 18 }]
 */
export function topLevelMembers(bytes: Uint8Array): JsonMember[] {
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const members: JsonMember[] = [];
  let at = skipSpace(buffer, 0) + 1; // past the opening brace
  for (;;) {
    at = skipSpace(buffer, at);
    if (at >= buffer.length || buffer[at] === CLOSE_BRACE) return members;
    if (buffer[at] === COMMA) at = skipSpace(buffer, at + 1);
    const start = at;
    const keyEnd = stringEnd(buffer, at);
    const key = keyOf(buffer, start, keyEnd);
    at = skipSpace(buffer, keyEnd) + 1; // past the colon
    at = valueEnd(buffer, skipSpace(buffer, at));
    members.push({ key, start, end: at });
  }
}

function keyOf(buffer: Buffer, start: number, end: number): string {
  const written = buffer.toString('utf8', start + 1, end - 1);
  return written.includes('\\') ? (JSON.parse(`"${written}"`) as string) : written;
}

function skipSpace(buffer: Buffer, at: number): number {
  while (at < buffer.length) {
    const byte = buffer[at]!;
    if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) break;
    at++;
  }
  return at;
}

/** The offset just past the string that opens at `at`. */
function stringEnd(buffer: Buffer, at: number): number {
  let next = at + 1;
  // Short strings (keys, roles, schema words) in a loop here; long ones by indexOf, which is
  // native.
  for (let left = 48; left > 0 && next < buffer.length; left--) {
    const byte = buffer[next]!;
    if (byte === QUOTE) return next + 1;
    next += byte === BACKSLASH ? 2 : 1;
  }
  for (;;) {
    const quote = buffer.indexOf(QUOTE, next);
    if (quote < 0) return buffer.length;
    let backslashes = 0;
    while (quote - 1 - backslashes >= next && buffer[quote - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    next = quote + 1;
  }
}

/** The offset just past the value that starts at `at`. */
function valueEnd(buffer: Buffer, at: number): number {
  const first = buffer[at];
  if (first === QUOTE) return stringEnd(buffer, at);
  if (first !== OPEN_BRACE && first !== OPEN_BRACKET) {
    // A number, true, false or null: up to the next delimiter.
    while (at < buffer.length) {
      const byte = buffer[at]!;
      if (byte === COMMA || byte === CLOSE_BRACE || byte === CLOSE_BRACKET || byte <= 0x20) break;
      at++;
    }
    return at;
  }
  let depth = 0;
  while (at < buffer.length) {
    const byte = buffer[at]!;
    if (byte === QUOTE) {
      at = stringEnd(buffer, at);
      continue;
    }
    if (byte === OPEN_BRACE || byte === OPEN_BRACKET) depth++;
    else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
      if (depth === 0) return at + 1;
    }
    at++;
  }
  return at;
}
