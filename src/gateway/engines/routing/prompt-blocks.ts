/** What the request path tells an engine about a request, for routing (see `Engine.acquire`). */
export interface RoutingHint {
  /**
   * The client's request body: chat `messages`, completions' `prompt`, embeddings' `input`, the
   * OpenAI `user`. Read only by a router that routes on prefixes.
   */
  body: Record<string, unknown>;
  /**
   * The organization it is for: its prompts are hashed apart from every other organization's (the
   * first block seeded by it), as an engine salted per organization caches them, so affinity goes
   * where its own blocks are.
   */
  organization?: string;
  /** A session key the client sent (the `x-session-id` header), preferred to `user`. */
  session?: string;
  /**
   * The replica another gateway replica freed the slot this request was given on (flow control's
   * peers): chosen while it is ready, whatever this gateway's last read of its load says.
   */
  replica?: string;
}

/**
 * Chained hashes of the prompt's full blocks of `blockChars` characters, the
 * prompt read the way a chat template joins it (role, then text, message after
 * message; non-text parts left out), with no string of the whole prompt made:
 * an agent's 200 KB prompt is walked once, where rendering it and hashing the
 * rendering cost 3 ms. Empty when the body has no prompt. A `seed` (the
 * organization) goes into the first block's hash, and so into every hash
 * chained on it, as vLLM's `cache_salt` does: two organizations' equal prompts
 * hash apart.
 *
 * @example
 * promptBlockHashes({ messages: [{ role: 'system', content: 'Be brief.' }] }, 64); // the hashes of '<system>\nBe brief.\n'
 */
export function promptBlockHashes(body: Record<string, unknown>, blockChars: number, seed?: string): number[] {
  const hasher = new BlockHasher(blockChars);
  if (seed !== undefined) hasher.seed(seed);
  const { messages, prompt, input } = body;
  if (Array.isArray(messages)) {
    for (const message of messages as unknown[]) {
      if (typeof message !== 'object' || message === null) continue;
      const { role, content } = message as { role?: unknown; content?: unknown };
      hasher.add(`<${typeof role === 'string' ? role : ''}>\n`);
      if (typeof content === 'string') hasher.add(content);
      else if (Array.isArray(content)) for (const part of content as unknown[]) hasher.add(textOf(part));
      hasher.add('\n');
    }
  } else if (typeof prompt === 'string') hasher.add(prompt);
  else if (typeof input === 'string') hasher.add(input);
  return hasher.hashes;
}

function textOf(part: unknown): string {
  if (typeof part !== 'object' || part === null) return '';
  const text = (part as { text?: unknown }).text;
  return typeof text === 'string' ? text : '';
}

/**
 * Chained hashes of a text's full blocks of `blockChars` characters: the
 * hash at a block's end covers every character before it, so equal hashes mean
 * equal prefixes, as vLLM's block hashes do over tokens. The gateway has no
 * tokenizer: 64 characters stand for about 16 tokens, one vLLM block.
 *
 * @example
 * prefixBlockHashes('a'.repeat(130), 64); // two hashes; the last 2 characters make no full block
 */
export function prefixBlockHashes(text: string, blockChars: number): number[] {
  const hasher = new BlockHasher(blockChars);
  hasher.add(text);
  return hasher.hashes;
}

/**
 * A running 2×32-bit FNV-1a over the UTF-16 code units of text given in
 * pieces, read at each block boundary as one number of 53 bits (21 of one
 * half, 32 of the other). A number, not a string: formatting one for each of a
 * long prompt's thousands of blocks cost four times the hashing itself, and
 * the prefix index keys on it. Two prefixes share a number by chance about
 * once in 2^53 comparisons.
 */
class BlockHasher {
  readonly hashes: number[] = [];
  // Signed 32-bit integers (`Math.imul`'s own results): small integers to V8 in every tier.
  private low = 0x811c9dc5 | 0;
  private high = 0x01000193 ^ 0x5bd1e995;
  private filled = 0;

  constructor(private readonly blockChars: number) {}

  /**
   * Mixes `text` into the running hash without filling a block: what follows hashes apart from the
   * same without it.
   */
  seed(text: string): void {
    const units = codeUnitsOf(`${text}\u0000`);
    let { low, high } = this;
    for (let i = 0; i < units.length; i++) {
      low = Math.imul(low ^ units[i]!, 0x01000193);
      high = Math.imul(high ^ units[i]!, 0x01000193 + 2);
    }
    this.low = low;
    this.high = high;
  }

  add(text: string): void {
    // The code units are read from their bytes, not with `charCodeAt`: on the gateway's request
    // path `charCodeAt` over a parsed body's strings took 12 ns a character (a 200 KB prompt 2.6
    // ms) where encoding them and reading the bytes takes about 3 ns (measured with BENCH_ROUTED=1,
    // docs/benchmark.md).
    const units = codeUnitsOf(text);
    let { low, high, filled } = this;
    const blockChars = this.blockChars;
    for (let i = 0; i < units.length; i++) {
      const c = units[i]!;
      low = Math.imul(low ^ c, 0x01000193);
      high = Math.imul(high ^ c, 0x01000193 + 2);
      if (++filled === blockChars) {
        this.hashes.push((high >>> 11) * 0x1_0000_0000 + (low >>> 0));
        filled = 0;
      }
    }
    this.low = low;
    this.high = high;
    this.filled = filled;
  }
}

/**
 * A text's UTF-16 code units, from Node's little-endian encoding read in the machine's own byte
 * order: on a big-endian machine every unit reads swapped, the same way in every request, which is
 * all the prefix index needs.
 */
function codeUnitsOf(text: string): Uint16Array {
  const bytes = Buffer.from(text, 'utf16le');
  // Node places a string's bytes 8-byte aligned (in its pool, or alone); copied should that ever
  // change.
  if (bytes.byteOffset % 2 === 0) return new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2);
  return new Uint16Array(Uint8Array.from(bytes).buffer);
}

/**
 * The session a request belongs to: the header's key, else the OpenAI `user` field; null without
 * either.
 */
export function sessionOf(hint: RoutingHint): string | null {
  if (hint.session) return hint.session;
  const user = hint.body.user;
  return typeof user === 'string' && user !== '' ? user : null;
}
