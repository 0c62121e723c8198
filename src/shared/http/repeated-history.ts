/**
 * The conversation half of `RepeatedMembers` (`repeated-members.ts`, which says why a cut is
 * exact): finding the items a key's last body began its history array with at the start of the next
 * body's, and keeping the next body's. Also the helpers both halves share.
 */

/**
 * The top-level arrays an agent sends again every turn with new items at the end: its conversation
 * (chat and Messages, Responses).
 */
const HISTORIES = ['messages', 'input'];
/** How each history array opens in `JSON.stringify`'s bytes: where its kept items are looked for. */
const OPENINGS = new Map(HISTORIES.map((name) => [name, Buffer.from(`${JSON.stringify(name)}:[`)]));
const COMMA = 0x2c;
/**
 * A history of smaller items on average is not kept: comparing an item (about 150 ns a call) would
 * then cost more than parsing it, so a body of many tiny items (a hostile one) cannot make each
 * request slower than a whole parse.
 */
const MIN_AVERAGE_ITEM_BYTES = 256;
/**
 * At most this many items are kept of one history, the rest parsed every time: a request compares
 * at most these.
 */
const MAX_ITEMS_KEPT = 2048;
/**
 * How many of a kept value's first bytes are looked for before the rest is compared
 * (`indexOfLong`).
 */
const PROBE_BYTES = 64;

/**
 * The items a sender's last body began its conversation with: each one's bytes and its value, in
 * order.
 */
export interface KeptHistory {
  name: string;
  items: readonly Buffer[];
  values: readonly unknown[];
}

/**
 * Where a body's history array began with `count` kept items: from `at` (just after its `[`) to
 * `end`.
 */
export interface HistoryMatch {
  history: KeptHistory;
  count: number;
  at: number;
  end: number;
}

/**
 * A run of a body's bytes taken as kept: replaced by a placeholder before the parse, filled in
 * after.
 */
export interface Cut {
  at: number;
  end: number;
  name: string;
  /**
   * Whether the placeholder was parsed where the kept bytes must stand: otherwise the body is
   * parsed whole.
   */
  landed(body: Record<string, unknown>, mark: string): boolean;
  fill(body: Record<string, unknown>): void;
}

/**
 * The history `body` begins with, as bytes and frozen values: the items its parse took as kept,
 * then each further item whose `JSON.stringify` bytes follow in `raw`. Null when there is nothing
 * new to keep, or its items are too small to be worth it (`MIN_AVERAGE_ITEM_BYTES`); 'miss' when
 * not even the first item is written as `JSON.stringify` writes it (another client library's
 * spacing or escapes).
 */
export function historyKept(
  raw: Buffer,
  body: Record<string, unknown>,
  match?: HistoryMatch,
): KeptHistory | 'miss' | null {
  const name = HISTORIES.find((candidate) => Array.isArray(body[candidate]));
  if (!name) return null;
  const items = body[name] as unknown[];
  // Items that could not average MIN_AVERAGE_ITEM_BYTES were they the whole body: not even written
  // to find out.
  if (raw.length < items.length * MIN_AVERAGE_ITEM_BYTES) return null;
  const taken = match?.history.name === name ? match : undefined;
  // A body that only repeats what was kept (or all that may be kept) changes nothing.
  const whole = taken && taken.count === taken.history.items.length;
  if (whole && (taken.count === items.length || taken.count >= MAX_ITEMS_KEPT)) return null;
  let end = taken?.end ?? openingEnd(raw, name);
  if (end < 0) return null;
  const bytes = taken?.history.items.slice(0, taken.count) ?? [];
  const values = taken?.history.values.slice(0, taken.count) ?? [];
  for (let i = bytes.length; i < Math.min(items.length, MAX_ITEMS_KEPT); i++) {
    const item = Buffer.from(JSON.stringify(items[i]));
    end = nextItemEnd(raw, item, end, i === 0);
    if (end < 0) break;
    bytes.push(item);
    values.push(items[i]);
  }
  if (bytes.length === 0) return items.length === 0 ? null : 'miss';
  const size = bytes.reduce((sum, item) => sum + item.length, 0);
  if (size < bytes.length * MIN_AVERAGE_ITEM_BYTES) return null;
  // Frozen once kept: every later request of the key shares them.
  for (let i = taken?.count ?? 0; i < values.length; i++) deepFreeze(values[i]);
  return { name, items: bytes, values };
}

/**
 * How far `raw`'s history array begins with the items of `history`, compared byte for byte; null
 * when not at all.
 */
export function historyIn(raw: Buffer, history: KeptHistory): HistoryMatch | null {
  // Looked for with its first item's first bytes: `"messages":[` alone is slow to find after 70 KB
  // of tools.
  const opening = OPENINGS.get(history.name)!;
  const found = raw.indexOf(Buffer.concat([opening, history.items[0]!.subarray(0, PROBE_BYTES)]));
  if (found < 0) return null;
  const at = found + opening.length;
  let end = at;
  let count = 0;
  for (const item of history.items) {
    const next = nextItemEnd(raw, item, end, count === 0);
    if (next < 0) break;
    end = next;
    count += 1;
  }
  return count === 0 ? null : { history, count, at, end };
}

/** Where the first `"name":[` of `raw` ends (its first item's place), or -1. */
function openingEnd(raw: Buffer, name: string): number {
  const opening = OPENINGS.get(name)!;
  const found = raw.indexOf(opening);
  return found < 0 ? -1 : found + opening.length;
}

/**
 * `raw.indexOf(bytes)`, quicker for a long `bytes`: Node's search prepares a table as long as what
 * it looks for (27 µs for Claude Code's 61 KB of tools, 2 µs to find their first bytes and compare
 * the rest).
 */
export function indexOfLong(raw: Buffer, bytes: Buffer): number {
  if (bytes.length <= PROBE_BYTES) return raw.indexOf(bytes);
  const probe = bytes.subarray(0, PROBE_BYTES);
  for (let at = raw.indexOf(probe); at >= 0; at = raw.indexOf(probe, at + 1)) {
    if (at + bytes.length > raw.length) return -1;
    if (raw.compare(bytes, 0, bytes.length, at, at + bytes.length) === 0) return at;
  }
  return -1;
}

/**
 * Where `item` ends in `raw` when its bytes are the array's next item after `end` (its first when
 * `first`); else -1.
 */
function nextItemEnd(raw: Buffer, item: Buffer, end: number, first: boolean): number {
  if (!first && raw[end] !== COMMA) return -1;
  const from = first ? end : end + 1;
  const to = from + item.length;
  return to <= raw.length && raw.compare(item, 0, item.length, from, to) === 0 ? to : -1;
}

/**
 * The cut of a history's kept items. Its placeholder must be parsed as the first item of the body's
 * own top-level array of that name: the bytes it replaced, kept items with commas between, were
 * then that array's first items.
 */
export function historyCut(match: HistoryMatch): Cut {
  const { name, values } = match.history;
  return {
    at: match.at,
    end: match.end,
    name,
    landed: (body, mark) => Array.isArray(body[name]) && (body[name] as unknown[])[0] === mark,
    fill: (body) => (body[name] = [...values.slice(0, match.count), ...(body[name] as unknown[]).slice(1)]),
  };
}

/** Freezes a parsed JSON value and everything in it (a parsed value has no cycles). */
export function deepFreeze(value: unknown): unknown {
  const stack = [value];
  while (stack.length > 0) {
    const next = stack.pop();
    if (typeof next !== 'object' || next === null || Object.isFrozen(next)) continue;
    Object.freeze(next);
    for (const child of Object.values(next)) stack.push(child);
  }
  return value;
}
