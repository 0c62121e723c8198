import { type BlockLease, KvCache } from './kv-cache.js';

/**
 * How a loaded engine behaves: vLLM's scheduler limits and a GPU's speed (see `LoadedModelOptions`
 * for defaults).
 */
export interface SchedulerSettings {
  maxNumSeqs: number;
  blockSize: number;
  numGpuBlocks: number;
  prefillMsPerToken: number;
  decodeMsPerStep: number;
  decodeMsPerSeq: number;
  /**
   * Every simulated duration is multiplied by this (0.1: ten times faster than the GPU it stands
   * for).
   */
  timeScale: number;
  /**
   * vLLM's `--scheduling-policy`: 'fcfs', or 'priority' (by each request's priority, preempting
   * lower ones).
   */
  policy: 'fcfs' | 'priority';
}

/** One request as the scheduler sees it. */
export interface SequenceRequest {
  /** Chained hashes of the prompt's full blocks. */
  blockHashes: readonly string[];
  /** vLLM's `priority`: lower is served first under the priority policy (default 0). */
  priority?: number;
  promptTokens: number;
  /** Tokens to generate. */
  outputTokens: number;
  /** Called once per generated token, in order, from 0. */
  emit(index: number): void;
  /** True once the client left or the simulator closed: the sequence is dropped at the next step. */
  aborted(): boolean;
  /**
   * Called once at admission with the prompt tokens found in the prefix cache (what usage reports
   * as cached).
   */
  admitted?(cachedTokens: number): void;
}

interface Sequence extends SequenceRequest {
  lease?: BlockLease;
  /** Its order of arrival: ties of priority go to the earlier. */
  arrival: number;
  /** Whether it was admitted once: `admitted` reports the first admission's cached tokens only. */
  started: boolean;
  /** Prompt tokens still to prefill (uncached), charged to the step that admits the sequence. */
  prefill: number;
  generated: number;
  done(completed: boolean): void;
}

/**
 * A simulated vLLM engine core for one model: requests wait in a FIFO queue
 * until the running batch has room (`maxNumSeqs`) and the KV cache has blocks
 * for the prompt and the whole output (reserved at admission, so under 'fcfs'
 * no sequence is ever preempted). Under the 'priority' policy the queue is
 * ordered by (priority, arrival), and a waiting request of a better (lower)
 * priority than the worst running one, when the batch or the cache is full,
 * preempts it (the worst priority, the latest arrival among equals): its
 * blocks are freed and it goes back to the queue, to prefill again its prompt
 * and what it generated when it resumes (vLLM's recompute preemption), its
 * tokens continuing where they stopped. Each step prefills the newly admitted prompts' uncached
 * tokens and decodes one token for every running sequence, taking
 * `decodeMsPerStep + decodeMsPerSeq × batch + prefillMsPerToken × prefilled`,
 * scaled by `timeScale`. Steps keep an absolute schedule, so timer
 * granularity does not add up over a long generation. Idle, it holds no timer.
 */
export class Scheduler {
  readonly cache: KvCache;
  private readonly waiting: Sequence[] = [];
  private readonly running: Sequence[] = [];
  private looping = false;
  private arrivals = 0;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  /** Prompt tokens looked up in the prefix cache (`vllm:prefix_cache_queries_total`). */
  queries = 0;
  /** Of those, tokens found cached (`vllm:prefix_cache_hits_total`). */
  hits = 0;
  /** Running sequences sent back to the queue for a better one (`vllm:num_preemptions_total`). */
  preemptions = 0;

  constructor(readonly settings: SchedulerSettings) {
    this.cache = new KvCache(settings.numGpuBlocks, settings.blockSize);
  }

  get numRunning(): number {
    return this.running.length;
  }

  get numWaiting(): number {
    return this.waiting.length;
  }

  /** Used blocks over all blocks, 0 to 1. */
  get kvUsage(): number {
    return this.cache.usedBlocks / this.cache.numBlocks;
  }

  /**
   * Queues a request; resolves true when its last token was emitted, false when it was aborted or
   * the scheduler closed.
   *
   * @example
   * const ok = await scheduler.submit({ blockHashes, promptTokens: 900, outputTokens: 64, emit: (i) => write(i), aborted: () => job.aborted });
   */
  submit(request: SequenceRequest): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const seq: Sequence = Object.assign({}, request, {
        prefill: request.promptTokens,
        generated: 0,
        arrival: this.arrivals++,
        started: false,
        done: resolve,
      });
      this.enqueue(seq);
      if (!this.looping) void this.loop();
    });
  }

  /** Stops: every sequence ends as not completed, the timer is cleared. */
  close(): void {
    this.closed = true;
    for (const seq of [...this.waiting, ...this.running]) this.end(seq, false);
    this.waiting.length = 0;
    this.running.length = 0;
    this.wakeUp();
  }

  private async loop(): Promise<void> {
    this.looping = true;
    let next = performance.now();
    while (!this.closed && (this.waiting.length > 0 || this.running.length > 0)) {
      this.dropAborted();
      const prefilled = this.admit();
      if (this.running.length === 0) {
        // Waiting sequences that cannot fit even with nothing running are too large for the cache:
        // they fail.
        for (const seq of this.waiting.splice(0)) this.end(seq, false);
        break;
      }
      const { decodeMsPerStep, decodeMsPerSeq, prefillMsPerToken, timeScale } = this.settings;
      next += (decodeMsPerStep + decodeMsPerSeq * this.running.length + prefillMsPerToken * prefilled) * timeScale;
      const delay = next - performance.now();
      if (delay > 0) await this.sleep(delay);
      else next = Math.max(next, performance.now() - 50);
      this.decode();
    }
    this.looping = false;
  }

  // Moves waiting sequences into the batch while both the batch and the cache have room (in queue
  // order: the head blocks the rest), preempting worse running sequences for a better head under
  // the priority policy.
  private admit(): number {
    let prefilled = 0;
    const { maxNumSeqs, blockSize } = this.settings;
    while (this.waiting.length > 0) {
      const seq = this.waiting[0]!;
      const totalBlocks = Math.ceil((seq.promptTokens + seq.outputTokens) / blockSize);
      const lease =
        this.running.length < maxNumSeqs
          ? this.cache.allocate(seq.blockHashes, Math.max(0, totalBlocks - seq.blockHashes.length))
          : null;
      if (!lease) {
        if (this.preemptFor(seq)) continue;
        break;
      }
      this.waiting.shift();
      // As vLLM, the last prompt token is always computed: a fully cached prompt still prefills one
      // block.
      const hitTokens = Math.min(lease.hitBlocks, Math.floor((seq.promptTokens - 1) / blockSize)) * blockSize;
      this.queries += seq.promptTokens;
      this.hits += hitTokens;
      seq.lease = lease;
      // A resumed sequence computes again what it generated before it was preempted.
      seq.prefill = seq.promptTokens + seq.generated - hitTokens;
      if (!seq.started) seq.admitted?.(hitTokens);
      seq.started = true;
      prefilled += seq.prefill;
      this.running.push(seq);
    }
    return prefilled;
  }

  // Under the priority policy: preempts the worst running sequence (highest priority value, latest
  // arrival) when `head` is strictly better; true when one was preempted.
  private preemptFor(head: Sequence): boolean {
    if (this.settings.policy !== 'priority' || this.running.length === 0) return false;
    let victim = 0;
    for (let i = 1; i < this.running.length; i++) if (before(this.running[victim]!, this.running[i]!)) victim = i;
    const seq = this.running[victim]!;
    if ((seq.priority ?? 0) <= (head.priority ?? 0)) return false;
    this.running.splice(victim, 1);
    if (seq.lease) this.cache.release(seq.lease);
    seq.lease = undefined;
    this.preemptions++;
    this.enqueue(seq);
    return true;
  }

  // Into the waiting queue: at the end under fcfs, in (priority, arrival) order under the priority
  // policy.
  private enqueue(seq: Sequence): void {
    if (this.settings.policy !== 'priority') {
      this.waiting.push(seq);
      return;
    }
    let at = this.waiting.length;
    while (at > 0 && before(seq, this.waiting[at - 1]!)) at--;
    this.waiting.splice(at, 0, seq);
  }

  private decode(): void {
    for (let i = 0; i < this.running.length; i++) {
      const seq = this.running[i]!;
      if (seq.aborted()) continue;
      seq.emit(seq.generated++);
      if (seq.generated >= seq.outputTokens) {
        this.running.splice(i--, 1);
        this.end(seq, true);
      }
    }
  }

  private dropAborted(): void {
    for (const list of [this.waiting, this.running]) {
      for (let i = list.length - 1; i >= 0; i--) {
        const seq = list[i]!;
        if (!seq.aborted()) continue;
        list.splice(i, 1);
        this.end(seq, false);
      }
    }
  }

  private end(seq: Sequence, completed: boolean): void {
    if (seq.lease) this.cache.release(seq.lease);
    seq.lease = undefined;
    seq.done(completed);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(() => this.wakeUp(), ms);
    });
  }

  private wakeUp(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/** Whether `a` is served before `b`: the lower priority, then the earlier arrival. */
function before(a: Sequence, b: Sequence): boolean {
  const pa = a.priority ?? 0;
  const pb = b.priority ?? 0;
  return pa !== pb ? pa < pb : a.arrival < b.arrival;
}
