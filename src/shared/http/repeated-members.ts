import { randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import {
  deepFreeze,
  historyCut,
  historyIn,
  historyKept,
  indexOfLong,
  type Cut,
  type HistoryMatch,
  type KeptHistory,
} from './repeated-history.js';

/**
 * The top-level members an agent sends alike every turn, large enough to be worth not parsing
 * again: its tools, its system prompt.
 */
const MEMBERS = ['tools', 'system'];
/**
 * A member written in fewer bytes is parsed each time: finding and cutting it out would cost about
 * what parsing does.
 */
const MIN_MEMBER_BYTES = 2048;
/**
 * Conversations kept per sender: its last bodies' that continue none of the others (sessions,
 * sub-agents).
 */
const HISTORIES_KEPT = 4;
/** Senders (API keys) whose members are kept, the one least recently seen forgotten first. */
const SENDERS_KEPT = 256;
/**
 * The bytes kept for all senders together (each member is kept as bytes and as its parsed value:
 * counted twice).
 */
const MAX_KEPT_BYTES = 16 * 1024 * 1024;
/**
 * A sender whose bytes are not `JSON.stringify`'s this many times (another client library's
 * spacing) is not tried again.
 */
const MISSES_BEFORE_GIVING_UP = 3;

interface KeptMember {
  bytes: Buffer;
  value: unknown;
}

interface KeptSender {
  members: Map<string, KeptMember>;
  /**
   * The conversations of its last bodies, the latest first: a key may run several sessions (or
   * sub-agents) at once.
   */
  histories: KeptHistory[];
  /**
   * Members not found as `JSON.stringify` writes them (another client library's bytes): keeping
   * them stops at three.
   */
  misses: number;
  /**
   * The same for the history, counted apart: a client may write its tools as `JSON.stringify` does
   * and not its turns.
   */
  historyMisses: number;
}

/**
 * A body parsed, and the members taken as kept: their placeholders are in `body` until `fill` puts
 * them in.
 */
export interface ParsedBody {
  body: unknown;
  /**
   * Puts the kept members in place of their placeholders (after the body's shape is checked: theirs
   * was, when kept).
   */
  fill(): void;
}

/**
 * An agent sends the same tools (Claude Code: 17 tools, 61 KB) and system prompt every turn, and
 * `JSON.parse` of them is most of a turn's parse: thousands of strings and objects built again from
 * the same bytes. This keeps, per API key, those members' bytes and the value parsed from them. A
 * later body of the same key that holds the same bytes has them cut out before the parse, replaced
 * by a placeholder string no client can write (a random 128-bit name per process), and takes the
 * kept value where the placeholder lands.
 *
 * The kept value is used only when its placeholder lands where the member is: the body's own
 * top-level member of that name. Anywhere else (the same bytes nested in a message, a later member
 * of the same name, a body that is not valid JSON once cut) the body is parsed whole, as it would
 * be without this. Since the placeholder stands where a value was parsed, the bytes it replaced
 * were that member's whole value, and they parse to what was kept. Kept values are frozen: every
 * request of the key shares them, so none may change them.
 *
 * An agent also sends its whole conversation again every turn (`messages`, or a Responses `input`),
 * the last turn's items first, as they were written then, and one or two new ones at the end. The
 * items of a key's last bodies are kept too (its last `HISTORIES_KEPT` conversations: sessions and
 * sub-agents share a key), each one's bytes and value: a later body whose history array begins with
 * the same bytes, item after item, has that run cut out the same way, the placeholder then standing
 * as the array's first item. A 200 KB conversation is then parsed as its few new items, which also
 * spares the gateway a string over V8's 128 KiB largest regular object (allocated on fresh pages,
 * about 50 page faults each time).
 *
 * Kept per key, and only after the key was verified: a key's requests never see another key's
 * values, and never learn from their timing whether another key sends the same tools. Bounded by
 * `SENDERS_KEPT` and `MAX_KEPT_BYTES`.
 *
 * @example
 * const parsed = members.parse(keyHash, raw);
 * checkJsonShape(parsed.body, { storable: false });
 * parsed.fill();
 * members.keep(keyHash, raw, parsed.body); // after the key is verified
 */
export class RepeatedMembers {
  private readonly placeholder = `tollgate-kept-member:${randomBytes(16).toString('hex')}:`;
  /**
   * The kept history a parsed body began with, for `keep` to extend without comparing those items
   * again.
   */
  private readonly matches = new WeakMap<object, HistoryMatch>();
  private readonly kept = new LRUCache<string, KeptSender>({
    max: SENDERS_KEPT,
    maxSize: MAX_KEPT_BYTES,
    sizeCalculation: (sender) => {
      let size = 1;
      for (const member of sender.members.values()) size += 2 * member.bytes.length;
      for (const history of sender.histories) for (const item of history.items) size += 2 * item.length;
      return size;
    },
  });

  /**
   * Parses `raw` as `JSON.parse` would (and throws as it does), taking `sender`'s kept members
   * where the bytes are theirs.
   */
  parse(sender: string, raw: Buffer): ParsedBody {
    const kept = this.kept.get(sender);
    if (!kept) return parsedWhole(raw);
    const historyMatch = longestMatch(raw, kept.histories);
    const cuts = apart([...memberCuts(raw, kept.members), ...(historyMatch ? [historyCut(historyMatch)] : [])]);
    if (cuts.length === 0) return parsedWhole(raw);
    let text = '';
    let from = 0;
    for (const cut of cuts) {
      text += `${raw.toString('utf8', from, cut.at)}"${this.placeholder}${cut.name}"`;
      from = cut.end;
    }
    text += raw.toString('utf8', from);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const object = body as Record<string, unknown>;
    const landed =
      typeof body === 'object' &&
      body !== null &&
      cuts.every((cut) => cut.landed(object, `${this.placeholder}${cut.name}`));
    if (!landed) {
      // Parsed again whole; what was kept is dropped, so a sender's bodies are not parsed twice
      // each.
      this.kept.delete(sender);
      return parsedWhole(raw);
    }
    if (historyMatch && cuts.some((cut) => cut.name === historyMatch.history.name))
      this.matches.set(object, historyMatch);
    return { body, fill: () => cuts.forEach((cut) => cut.fill(object)) };
  }

  /**
   * Keeps `body`'s large members for `sender`'s later requests, when `raw` holds them as
   * `JSON.stringify` writes them (the JavaScript SDKs' bytes). Call it only once the sender is
   * known to be a real key.
   */
  keep(sender: string, raw: Buffer, body: Record<string, unknown>): void {
    // No member of a smaller body can be large enough: not even measured.
    if (raw.length < MIN_MEMBER_BYTES) return;
    let kept = this.kept.get(sender);
    let changed = false;
    for (const name of MEMBERS) {
      const value = body[name];
      if (typeof value !== 'object' || value === null || kept?.members.get(name)?.value === value) continue;
      if ((kept?.misses ?? 0) >= MISSES_BEFORE_GIVING_UP) break;
      const text = JSON.stringify(value);
      if (text.length < MIN_MEMBER_BYTES) continue;
      kept ??= { members: new Map(), histories: [], misses: 0, historyMisses: 0 };
      changed = true;
      const bytes = Buffer.from(text);
      if (indexOfLong(raw, bytes) < 0) {
        kept.misses += 1;
        continue;
      }
      kept.members.set(name, { bytes, value: deepFreeze(value) });
    }
    if ((kept?.historyMisses ?? 0) < MISSES_BEFORE_GIVING_UP) {
      const match = this.matches.get(body);
      const history = historyKept(raw, body, match);
      if (history) {
        kept ??= { members: new Map(), histories: [], misses: 0, historyMisses: 0 };
        if (history === 'miss') kept.historyMisses += 1;
        else {
          // The conversation it continues gives way to it; otherwise the least recent one, past
          // HISTORIES_KEPT.
          const others = kept.histories.filter((earlier) => earlier !== match?.history);
          kept.histories = [history, ...others].slice(0, HISTORIES_KEPT);
        }
        changed = true;
      }
    }
    // Set again when changed: the sender's size is counted when it is set.
    if (kept && changed) this.kept.set(sender, kept);
  }
}

/**
 * The cuts of the kept members whose bytes `raw` holds; each must be parsed as the body's own
 * member of its name.
 */
function memberCuts(raw: Buffer, members: Map<string, KeptMember>): Cut[] {
  return [...members]
    .map(([name, member]) => ({ name, member, at: indexOfLong(raw, member.bytes) }))
    .filter(({ at }) => at >= 0)
    .map(({ name, member, at }) => ({
      at,
      end: at + member.bytes.length,
      name,
      landed: (body, mark) => body[name] === mark,
      fill: (body) => (body[name] = member.value),
    }));
}

/** `raw` parsed as it is, with nothing kept to put in. */
function parsedWhole(raw: Buffer): ParsedBody {
  return { body: JSON.parse(raw.toString('utf8')), fill: () => {} };
}

/** The kept conversation `raw`'s history array begins with the most items of, or null. */
function longestMatch(raw: Buffer, histories: KeptHistory[]): HistoryMatch | null {
  let longest: HistoryMatch | null = null;
  for (const history of histories) {
    const match = historyIn(raw, history);
    if (match && match.count > (longest?.count ?? 0)) longest = match;
  }
  return longest;
}

/** The cuts in the order they appear, none overlapping another. */
function apart(cuts: Cut[]): Cut[] {
  const sorted = cuts.sort((a, b) => a.at - b.at);
  const kept: Cut[] = [];
  let end = 0;
  for (const cut of sorted) {
    if (cut.at < end) continue;
    kept.push(cut);
    end = cut.end;
  }
  return kept;
}
