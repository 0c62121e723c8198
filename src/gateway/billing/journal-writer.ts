import { JournalFile } from './journal-file.js';

/** Marks wait at most this long for a write to go out with. */
const MARK_FLUSH_MS = 200;

/**
 * Appends made alone (see `writeAlone`) are written on the main thread only while the disk's syncs
 * average within this: longer, and the event loop would stall.
 */
const ALONE_WRITE_BUDGET_MS = 2;
/** How long appends go through the thread pool again once alone writes went over their budget. */
const ALONE_WRITE_PAUSE_MS = 5_000;

/**
 * How the charge journal's lines reach its file (`ChargeJournal` decides which lines): appends that
 * arrive while a write is under way share the next write, which is durable when it returns
 * (O_DSYNC; group commit: one sync per batch, about 0.2 to 0.5 ms on the development machine's
 * disk, whatever the batch's size); a line with no write under way may be written at once, on the
 * main thread (`writeAlone`). Marks are not synced and need no write of their own: they wait here
 * and go out with the next write or within MARK_FLUSH_MS. One write at a time: `replaceFile` waits
 * for the one under way.
 */
export class JournalWriter {
  private queue: Array<{ line: string; done: (error?: Error) => void }> = [];
  private writing = false;
  private appliedMarks: string[] = [];
  private reportedMarks: string[] = [];
  private markTimer: NodeJS.Timeout | null = null;
  /** Until when appends made alone go through the thread pool anyway (the disk was slow to sync). */
  private aloneWritesPausedUntil = 0;
  private aloneWriteMs = 0; // the moving average of alone writes' durations
  /** The file, once `replaceFile` started it. */
  private disk: JournalFile | null = null;

  /** `onWritten`: called when a line written alone is durable (the applier may wait for one). */
  constructor(
    private readonly file: string,
    private readonly roomBytes: number,
    private readonly onWritten: () => void,
  ) {}

  /** The file's size in bytes (0 before it is started). */
  get size(): number {
    return this.disk?.size ?? 0;
  }

  /**
   * Writes a line at once, on this thread, if no write is under way and the file's room holds it;
   * false when not written (the caller queues the line, and the queued write gives it any error).
   */
  writeAlone(line: string): boolean {
    const disk = this.disk;
    // A queued line means a write is under way (`flush` runs while the queue holds any): `writing`
    // covers both.
    if (!disk || this.writing || performance.now() < this.aloneWritesPausedUntil) return false;
    const startedAt = performance.now();
    if (!disk.writeNow(Buffer.from(`${line}\n`))) return false;
    this.onWritten();
    const endedAt = performance.now();
    // A moving average, so that one slow sync (a few in a thousand take 1 to 4 ms here) pauses
    // nothing.
    this.aloneWriteMs = 0.9 * this.aloneWriteMs + 0.1 * (endedAt - startedAt);
    if (this.aloneWriteMs > ALONE_WRITE_BUDGET_MS) {
      this.aloneWritesPausedUntil = endedAt + ALONE_WRITE_PAUSE_MS;
      this.aloneWriteMs = 0;
    }
    // More room made now, by the queued path, before a line needs it.
    if (disk.roomLow) void this.write('').catch(() => {});
    return true;
  }

  /** Queues a line ('' for marks only) for the next write; resolves once it is durable. */
  write(line: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ line, done: (error) => (error ? reject(error) : resolve()) });
      if (!this.writing) void this.flush();
    });
  }

  /** Keeps marks for the next write, which goes out within MARK_FLUSH_MS if nothing else writes. */
  addMarks(entry: { applied: string[] } | { reported: string[] }): void {
    if ('applied' in entry) this.appliedMarks.push(...entry.applied);
    else this.reportedMarks.push(...entry.reported);
    this.markTimer ??= setTimeout(() => {
      this.markTimer = null;
      if (this.hasMarks()) void this.write('').catch(() => {});
    }, MARK_FLUSH_MS);
    this.markTimer.unref();
  }

  /**
   * Starts the file afresh with `text()` (`JournalFile.start`: a crash leaves the old file or this
   * one), once no write is under way. Waiting marks are dropped: what they say is in the text.
   */
  async replaceFile(text: () => string): Promise<void> {
    while (this.writing) await new Promise((resolve) => setTimeout(resolve, 1));
    this.writing = true;
    try {
      this.appliedMarks = [];
      this.reportedMarks = [];
      const started = await JournalFile.start(this.file, text(), this.roomBytes);
      await this.disk?.close();
      this.disk = started;
    } finally {
      this.writing = false;
      // Appends that came during the rewrite wait in the queue.
      if (this.queue.length > 0) void this.flush();
    }
  }

  async close(): Promise<void> {
    if (this.markTimer) clearTimeout(this.markTimer);
    this.markTimer = null;
    if (this.hasMarks()) await this.write('').catch(() => {});
    while (this.writing || this.queue.length > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await this.disk?.close();
  }

  private hasMarks(): boolean {
    return this.appliedMarks.length + this.reportedMarks.length > 0;
  }

  /** The lines of the marks waiting to be written, taken out of the wait. */
  private takeMarks(): string {
    let text = '';
    if (this.appliedMarks.length > 0) text += `${JSON.stringify({ applied: this.appliedMarks.splice(0) })}\n`;
    if (this.reportedMarks.length > 0) text += `${JSON.stringify({ reported: this.reportedMarks.splice(0) })}\n`;
    return text;
  }

  private async flush(): Promise<void> {
    this.writing = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0);
      const text = this.takeMarks() + batch.map((item) => (item.line ? `${item.line}\n` : '')).join('');
      try {
        // One durable write for the whole batch: the group commit.
        await this.disk!.write(text);
        for (const item of batch) item.done();
      } catch (error) {
        for (const item of batch) item.done(error as Error);
      }
      // More room made while nothing waits for a write, if possible (a line queued meanwhile waits
      // for it).
      if (this.queue.length === 0 && this.disk!.roomLow) await this.disk!.makeRoom();
    }
    this.writing = false;
  }
}
