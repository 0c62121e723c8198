/** How long output waits to be stored with what follows it: the live log lags by at most this. */
const FLUSH_MS = 200;
/** A piece is stored at once past this size, and a line longer than it is stored unfinished. */
const MAX_PIECE_CHARS = 64 * 1024;
/** Secrets shorter than this are not masked: they would mask ordinary words. */
const MIN_SECRET_CHARS = 6;
const MASK = '********';

/**
 * A run's log as it is written: the tool's output, with every secret masked,
 * stored in order in pieces (whole lines, at most every 200 ms), so a reader
 * following it sees it live and the store is not written once per line.
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

  constructor(
    private readonly store: (seq: number, text: string) => Promise<void>,
    secrets: string[],
    private readonly onError: (error: unknown) => void = () => {},
  ) {
    this.addSecrets(secrets);
  }

  /** Masks these too in everything not yet stored. */
  addSecrets(secrets: string[]): void {
    // Each line of a multi-line secret (a private key) is masked on its own, longest first.
    const lines = secrets.flatMap((secret) => secret.split(/\r?\n/)).map((line) => line.trim());
    this.secrets = [...new Set([...this.secrets, ...lines])].filter((line) => line.length >= MIN_SECRET_CHARS).sort((a, b) => b.length - a.length);
  }

  write(text: string): void {
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
    let masked = text;
    for (const secret of this.secrets) masked = masked.split(secret).join(MASK);
    return masked;
  }

  private flush(all: boolean): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // A secret split over two writes is masked only once whole: an unfinished line waits (unless it is huge).
    const end = all || this.pending.length >= MAX_PIECE_CHARS ? this.pending.length : this.pending.lastIndexOf('\n') + 1;
    if (end === 0) {
      if (this.pending) this.timer = setTimeout(() => this.flush(false), FLUSH_MS);
      return;
    }
    const piece = this.mask(this.pending.slice(0, end));
    this.pending = this.pending.slice(end);
    const seq = this.seq++;
    this.chain = this.chain.then(() => this.store(seq, piece)).catch(this.onError);
    if (this.pending) this.timer = setTimeout(() => this.flush(false), FLUSH_MS);
  }
}
