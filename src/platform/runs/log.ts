import { storable } from './untrusted.js';

/** How long output waits to be stored with what follows it: the live log lags by at most this. */
const FLUSH_MS = 200;
/** A piece is stored at once past this size, and a line longer than it is stored unfinished. */
const MAX_PIECE_CHARS = 64 * 1024;
const MASK = '********';

/**
 * A run's log as it is written: the tool's output, with every secret masked,
 * stored in order in pieces (whole lines, at most every 200 ms), so a reader
 * following it sees it live and the store is not written once per line.
 * The tool's output is kept up to `maxBytes` (TOLLGATE_RUN_LOG_MB); past it
 * the log says it was cut and the rest of the tool's output is dropped as it
 * arrives (the run goes on), while the gateway's own lines (`note`) are
 * still stored. Every piece is stored as text PostgreSQL accepts (`storable`).
 *
 * @example
 * const log = new RunLogWriter((seq, text) => runs.appendLog(run.id, seq, text), [privateKey]);
 * log.write('Apply complete!\n');
 * await log.close();
 */
export class RunLogWriter {
  private pending = '';
  private seq = 0;
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  private secrets: string[] = [];
  /**
   * Every secret, longest first, in one pattern: one pass masks them all, never a mask inside a
   * mask.
   */
  private pattern: RegExp | null = null;

  /** Bytes of the tool's output taken so far; past `maxBytes` the rest is dropped. */
  private taken = 0;
  private readonly maxBytes: number;
  private readonly onError: (error: unknown) => void;

  constructor(
    private readonly store: (seq: number, text: string) => Promise<void>,
    secrets: string[],
    options: { maxBytes?: number; onError?: (error: unknown) => void } = {},
  ) {
    this.maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    this.onError = options.onError ?? (() => {});
    this.addSecrets(secrets);
  }

  /**
   * Masks these too in everything not yet stored, however short: a secret of
   * one character masks that character throughout the log (a safe log, if a
   * less readable one, is what marking it sensitive asks for).
   */
  addSecrets(secrets: string[]): void {
    // Each line of a multi-line secret (a private key) is masked on its own, without its
    // surrounding blanks.
    const lines = secrets.flatMap((secret) => secret.split(/\r?\n/)).map((line) => line.trim());
    this.secrets = [...new Set([...this.secrets, ...lines])]
      .filter((line) => line.length > 0)
      .sort((a, b) => b.length - a.length);
    this.pattern =
      this.secrets.length === 0
        ? null
        : new RegExp(this.secrets.map((secret) => secret.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  }

  /** The tool's output: kept while the log is within its bound. */
  write(text: string): void {
    if (this.taken > this.maxBytes) return;
    this.taken += Buffer.byteLength(text);
    if (this.taken > this.maxBytes) {
      const mib = Math.round(this.maxBytes / 1024 / 1024);
      this.note(
        `\n[tollgate] The log is cut here: the run printed more than TOLLGATE_RUN_LOG_MB (${mib} MiB). The run goes on; what it prints is no longer kept, but these lines are.\n`,
      );
      return;
    }
    this.add(text);
  }

  /** The gateway's own lines: kept whatever the tool printed. */
  note(text: string): void {
    this.add(text);
  }

  private add(text: string): void {
    this.pending += text;
    if (this.pending.length >= MAX_PIECE_CHARS) this.flush(false);
    else this.timer ??= setTimeout(() => this.flush(false), FLUSH_MS);
  }

  /** Stores everything written so far, the unfinished last line too, and waits until it is stored. */
  async close(): Promise<void> {
    this.flush(true);
    await this.chain;
  }

  /** Masks text the way the log does (for outputs and failures shown beside it). */
  mask(text: string): string {
    return this.pattern ? text.replace(this.pattern, MASK) : text;
  }

  private flush(all: boolean): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // A secret split over two writes is masked only once whole: an unfinished line waits (unless it
    // is huge).
    const end = all
      ? this.pending.length
      : this.pending.length >= MAX_PIECE_CHARS
        ? this.cutOfLongLine()
        : this.pending.lastIndexOf('\n') + 1;
    if (end === 0) {
      if (this.pending) this.timer = setTimeout(() => this.flush(false), FLUSH_MS);
      return;
    }
    const piece = storable(this.mask(this.pending.slice(0, end)));
    this.pending = this.pending.slice(end);
    const seq = this.seq++;
    this.chain = this.chain.then(() => this.store(seq, piece)).catch(this.onError);
    if (this.pending) this.timer = setTimeout(() => this.flush(false), FLUSH_MS);
  }

  /**
   * Where to cut a line too long to wait for its end: never inside a secret,
   * and never where a secret may begin whose rest has not been written yet
   * (the last `longest - 1` characters wait for the next piece).
   */
  private cutOfLongLine(): number {
    const longest = this.secrets[0]?.length ?? 0;
    let end = this.pending.length - Math.max(0, longest - 1);
    if (!this.pattern || end <= 0) return Math.max(0, end);
    for (const match of this.pending.matchAll(this.pattern)) {
      if (match.index >= end) break;
      // A whole secret across the cut goes with this piece, masked.
      if (match.index + match[0].length > end) end = match.index + match[0].length;
    }
    return end;
  }
}
