import { createHash } from 'node:crypto';

/** The blocks one running sequence holds, given back when it ends. */
export interface BlockLease {
  /** Hashes of the prompt's full blocks, in order (each one referenced once by this lease). */
  hashes: readonly string[];
  /** Blocks without a hash: the prompt's partial last block and the generated tokens' room. */
  anonymous: number;
  /** Leading prompt blocks that were already cached: their prefill is skipped. */
  hitBlocks: number;
}

/**
 * A vLLM-style paged KV cache with automatic prefix caching: `numBlocks`
 * blocks of `blockSize` tokens. A full prompt block is named by a hash of its
 * tokens chained on its parent's hash (so a hash names the whole prefix up to
 * it, as vLLM's block hashes do); a later prompt whose leading blocks have
 * cached hashes reuses them and skips their prefill. A block nobody
 * references stays cached until its room is needed: then the least recently
 * released goes first (tail blocks before their parents, as vLLM frees them
 * in reverse order).
 */
export class KvCache {
  /** Blocks never used, or whose hash was evicted. */
  private empty: number;
  /** Hashed blocks with their reference counts. */
  private readonly refs = new Map<string, number>();
  /** Hashed blocks with no reference, oldest release first: what eviction takes. */
  private readonly evictable = new Set<string>();
  private anonymous = 0;

  constructor(
    readonly numBlocks: number,
    readonly blockSize: number,
  ) {
    this.empty = numBlocks;
  }

  /**
   * Blocks referenced by running sequences: what `vllm:kv_cache_usage_perc` reports, over
   * `numBlocks`.
   */
  get usedBlocks(): number {
    return this.numBlocks - this.empty - this.evictable.size;
  }

  /** Cached blocks nobody references (evictable). */
  get cachedFreeBlocks(): number {
    return this.evictable.size;
  }

  /**
   * Takes the blocks of a sequence whose full prompt blocks hash to `hashes`
   * plus `anonymous` more; null when there are not enough free or evictable
   * blocks (the sequence then waits).
   *
   * @example
   * const lease = cache.allocate(promptBlockHashes(tokens, 16), 2);
   */
  allocate(hashes: readonly string[], anonymous: number): BlockLease | null {
    let hitBlocks = 0;
    while (hitBlocks < hashes.length && this.refs.has(hashes[hitBlocks]!)) hitBlocks++;
    let needed = anonymous;
    let reused = 0;
    for (const hash of hashes) {
      if (!this.refs.has(hash)) needed++;
      else if (this.evictable.has(hash)) reused++;
    }
    if (needed > this.empty + this.evictable.size - reused) return null;
    for (const hash of hashes) {
      const count = this.refs.get(hash);
      if (count !== undefined) {
        this.evictable.delete(hash);
        this.refs.set(hash, count + 1);
      } else {
        this.takeBlock();
        this.refs.set(hash, 1);
      }
    }
    for (let i = 0; i < anonymous; i++) this.takeBlock();
    this.anonymous += anonymous;
    return { hashes, anonymous, hitBlocks };
  }

  /** Gives a sequence's blocks back: hashed ones stay cached (evictable), tail first. */
  release(lease: BlockLease): void {
    this.empty += lease.anonymous;
    this.anonymous -= lease.anonymous;
    for (let i = lease.hashes.length - 1; i >= 0; i--) {
      const hash = lease.hashes[i]!;
      const count = (this.refs.get(hash) ?? 1) - 1;
      this.refs.set(hash, count);
      if (count === 0) this.evictable.add(hash);
    }
  }

  // One block for a new allocation: an empty one, else the least recently released cached one.
  private takeBlock(): void {
    if (this.empty > 0) {
      this.empty--;
      return;
    }
    const oldest = this.evictable.values().next().value as string;
    this.evictable.delete(oldest);
    this.refs.delete(oldest);
  }
}

/**
 * The chained hashes of a token sequence's full blocks: block i's hash covers
 * its own tokens and block i-1's hash, so equal hashes mean equal prefixes
 * (vLLM's `hash_block_tokens`, with sha256 truncated to 64 bits). A cache salt
 * (the request's `cache_salt`) is one of the first block's extra keys, as in
 * vLLM: it changes that hash and so every hash chained on it, and two prompts
 * share cached blocks only when their prefix and their salt both match.
 *
 * @example
 * promptBlockHashes(['a', 'b', 'c'], 2); // one hash: the partial block ['c'] has none
 * promptBlockHashes(['a', 'b'], 2, 'org-salt'); // another hash than without the salt
 */
export function promptBlockHashes(
  tokens: readonly string[],
  blockSize: number,
  cacheSalt: string | null = null,
): string[] {
  const hashes: string[] = [];
  let parent = '';
  for (let start = 0; start + blockSize <= tokens.length; start += blockSize) {
    const hash = createHash('sha256')
      .update(parent)
      .update('\u0000')
      .update(tokens.slice(start, start + blockSize).join('\u0001'));
    // The extra keys: only the first block's carry the salt (vLLM's
    // generate_block_hash_extra_keys).
    if (start === 0 && cacheSalt !== null) hash.update('\u0002').update(cacheSalt);
    parent = hash.digest('hex').slice(0, 16);
    hashes.push(parent);
  }
  return hashes;
}
