import type { TokenUsage, UsageSource } from './token-usage.js';
import type { ChargeJournal } from './journal.js';
import { type StreamState, streamedUsage } from './settlement.js';
import type { ChargeRecord } from './charge-writes.js';

/** What a relay tracks of a running stream (every protocol's stream state has these). */
export type RunningStream = Pick<StreamState, 'usage' | 'usageFinal' | 'tokenChunks'>;

/**
 * The clock is read at every this many chunks only, not at each: a read costs about 200 ns on the
 * development machine (`performance.now` and `Date.now` alike), as much as the rest of a chunk's
 * checkpoint work ten times over.
 */
const CLOCK_EVERY_CHUNKS = 8;

/** How often a stream's usage is made durable (`config.streamCheckpoint`). */
export interface CheckpointEvery {
  everyTokens: number;
  everyMs: number;
}

/** The charge a stream would get were it cut now: its usage so far, where it came from. */
export type ChargeSoFar = (usage: TokenUsage, usageSource: UsageSource) => ChargeRecord;

/**
 * A running stream's checkpoints: its usage so far, appended to the charge journal as the charge it
 * would get were the process to die now, at its first chunk (the engine has read the prompt) and
 * then every `everyTokens` generated tokens or `everyMs` (looked at every eighth chunk), whichever
 * comes first. A SIGKILLed or out-of-memory process's next start charges each unfinished stream its
 * last checkpoint (`readJournalText`); a stream that ends is charged by its own charge, which
 * replaces its checkpoints. So what a crash loses is what was generated since the last checkpoint:
 * fewer than `everyTokens` tokens, and about `everyMs` of generation at most.
 *
 * On the hot path it costs a few comparisons a chunk; a checkpoint is one
 * short line sharing the journal's next write (no database, nothing waits).
 * The usage is the one the stream's settle bills: the engine's running count
 * (the larger of it and the chunks seen, as vLLM counts one choice), else the
 * prompt's estimate and the token-carrying chunks.
 *
 * @example
 * const checkpoints = new StreamCheckpoints(journal, { everyTokens: 100, everyMs: 1000 }, chargeSoFar, promptEstimate);
 * onData: checkpoints.saw(writer.state);
 */
export class StreamCheckpoints {
  /** The tokens counted at the last checkpoint; -1 before the first. */
  private tokensAtLast = -1;
  private lastAt = 0;
  private chunksSinceClock = 0;
  private promptEstimate: number | null = null;

  constructor(
    private readonly journal: ChargeJournal,
    private readonly every: CheckpointEvery,
    private readonly chargeSoFar: ChargeSoFar,
    private readonly estimatePrompt: () => number,
  ) {}

  /**
   * Called with the stream's state after each engine chunk the relay read; appends a checkpoint
   * when one is due.
   */
  saw(stream: RunningStream): void {
    const tokens = stream.usage ? Math.max(stream.usage.completionTokens, stream.tokenChunks) : stream.tokenChunks;
    if (tokens === this.tokensAtLast) return;
    if (this.tokensAtLast >= 0 && tokens - this.tokensAtLast < this.every.everyTokens) {
      if (++this.chunksSinceClock < CLOCK_EVERY_CHUNKS) return;
      this.chunksSinceClock = 0;
      if (performance.now() - this.lastAt < this.every.everyMs) return;
    }
    this.tokensAtLast = tokens;
    this.chunksSinceClock = 0;
    this.lastAt = performance.now();
    this.journal.checkpoint(this.chargeSoFar(this.usageOf(stream), stream.usage ? 'upstream' : 'estimated'));
  }

  /**
   * What the stream would be billed now: the one rule of `settlement.ts`, the prompt estimated once
   * if need be.
   */
  private usageOf(stream: RunningStream): TokenUsage {
    const counted = streamedUsage(stream);
    if (counted) return counted;
    // Estimated once: the prompt does not change while the stream runs.
    this.promptEstimate ??= this.estimatePrompt();
    return { promptTokens: this.promptEstimate, completionTokens: stream.tokenChunks };
  }
}

/** Stands in for the checkpoints where there is nothing to charge (billing off). */
export const NO_CHECKPOINTS = { saw: (_stream: RunningStream): void => {} };
