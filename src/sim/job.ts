import type { ServerResponse } from 'node:http';
import type { ModelCounters } from './metrics.js';
import type { SimState } from './state.js';

/** With no delays, yield to other requests after this many tokens. */
const TOKENS_PER_TURN = 64;

/**
 * One admitted request: its counters, its timers, and what happens when the
 * client goes away (stop at once, count it as aborted).
 */
export class Job {
  /** Set when the client left or the simulator closed: generation must stop. */
  aborted = false;
  /**
   * Prompt tokens a loaded model found in its prefix cache (null: no prefix cache, nothing to
   * report).
   */
  cachedTokens: number | null = null;
  private done = false;
  private generated = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private wake: (() => void) | undefined;
  private readonly counters: ModelCounters;

  /** Admits the request: it counts as running from here. */
  constructor(
    private readonly state: SimState,
    modelName: string,
    private readonly res: ServerResponse,
    private readonly promptTokens: number,
    /** A loaded model's prompt block hashes (see Scheduler). */
    private readonly blockHashes: readonly string[] = [],
    /** Its `priority` (lower first), for a scheduler that orders by it. */
    private readonly priority = 0,
  ) {
    this.counters = state.metrics.counters(modelName);
    this.counters.running++;
    this.counters.promptTokens += promptTokens;
    this.counters.kvTokens += promptTokens;
    state.jobs.add(this);
    res.once('close', this.onClose);
    // The client may have left between reading the body and now: 'close' already fired.
    if (res.destroyed || res.socket === null || res.socket.destroyed) this.onClose();
  }

  /** Counts one generated token. */
  token(): void {
    this.generated++;
    this.counters.generationTokens++;
    this.counters.kvTokens++;
  }

  /** Ends a generation that completed normally. */
  finish(reason: 'stop' | 'length'): void {
    if (this.end()) {
      this.counters.completed++;
      this.counters.finished[reason]++;
    }
  }

  /** Ends a generation the simulator failed on purpose (mid-stream error, dropped connection). */
  fail(): void {
    if (this.end()) this.counters.finished.error++;
  }

  /** Stops without counting anything: the simulator is closing. */
  cancel(): void {
    this.aborted = true;
    this.end();
  }

  /** Waits `ms`, or less if the job is aborted meanwhile. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(this.wakeUp, ms);
    });
  }

  /** Lets other requests run (setImmediate) before continuing. */
  pause(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      this.immediate = setImmediate(this.wakeUp);
    });
  }

  /** Waits until the response's buffer drains (a slow client), or the job is aborted. */
  drain(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      this.res.once('drain', this.wakeUp);
    });
  }

  /**
   * Generates `count` tokens, waiting `ttftMs` before the first and `itlMs`
   * between the others; a timer is awaited only when a delay is set. `emit`
   * returns false when the socket buffer is full. Resolves false if aborted.
   */
  async produce(count: number, emit: (index: number) => boolean): Promise<boolean> {
    const { ttftMs, itlMs } = this.state;
    if (this.aborted) return false;
    const scheduler = this.state.metrics.schedulers.get(this.counters.name);
    if (scheduler) {
      // The loaded model paces tokens by its steps; a full socket buffer just queues in memory, as
      // uvicorn's does.
      const emitted = await scheduler.submit({
        blockHashes: this.blockHashes,
        priority: this.priority,
        promptTokens: this.promptTokens,
        outputTokens: count,
        emit: (i) => {
          this.token();
          emit(i);
        },
        aborted: () => this.aborted,
        admitted: (cached) => {
          this.cachedTokens = cached;
        },
      });
      return emitted && !this.aborted;
    }
    if (ttftMs > 0) {
      await this.sleep(ttftMs);
      if (this.aborted) return false;
    }
    for (let i = 0; i < count; i++) {
      if (i > 0) {
        if (itlMs > 0) await this.sleep(itlMs);
        else if (i % TOKENS_PER_TURN === 0) await this.pause();
        if (this.aborted) return false;
      }
      this.token();
      if (!emit(i)) {
        await this.drain();
        if (this.aborted) return false;
      }
    }
    return !this.aborted;
  }

  private readonly onClose = (): void => {
    if (this.done) return;
    this.aborted = true;
    if (this.end()) {
      this.counters.aborted++;
      this.counters.finished.abort++;
    }
  };

  // Releases counters and timers once; true the first time.
  private end(): boolean {
    if (this.done) return false;
    this.done = true;
    this.counters.running--;
    this.counters.kvTokens -= this.promptTokens + this.generated;
    this.state.jobs.delete(this);
    this.wakeUp();
    return true;
  }

  private readonly wakeUp = (): void => {
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.immediate !== undefined) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
    this.res.removeListener('drain', this.wakeUp);
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  };
}
