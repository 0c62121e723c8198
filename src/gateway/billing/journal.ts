import { JournalFile, ROOM_BYTES } from './journal-file.js';
import { JournalWriter } from './journal-writer.js';
import { chargeLine, checkpointLine, droppedLine, journalText, readJournalText } from './journal-lines.js';
import type { ChargeRecord } from './charge-writes.js';

/** Rewrite the file once it is this big and most of what it holds is done. */
const COMPACT_BYTES = 8 * 1024 * 1024;

/**
 * The charge journal: where a charge becomes durable before its response's
 * last byte, in this replica's data folder (`charges.journal`), so that the
 * answer never waits for PostgreSQL. Lines go at the end of what is written,
 * into room made ahead of them (`JournalFile`). Appends that arrive while a write is
 * under way share the next write, which is durable when it returns (O_DSYNC;
 * group commit: one sync per batch, about 0.2 to 0.5 ms on the development
 * machine's disk, whatever the batch's size); an append with no other billed
 * call under way is written at once, on the main thread (see `append`).
 * `ChargeApplier` then writes the charges to PostgreSQL, in batches, and
 * marks them applied here.
 *
 * Each line is one JSON object: `{"charge":…}`, `{"applied":[ids]}` (written
 * to PostgreSQL), `{"reported":[ids]}` (taken into the Redis wallet), or
 * `{"checkpoint":…}`, a running stream's charge so far (`checkpoint`). No
 * one waits for a mark (marks go out with the next write, or after at most
 * 200 ms): a mark lost to a crash only makes the charge be
 * written again (PostgreSQL ignores a request id it holds) or its wallet be
 * rebuilt from PostgreSQL. A `memory://` data folder keeps the journal in
 * memory only, for tests and benchmarks.
 *
 * @example
 * const journal = await ChargeJournal.open('.tollgate/charges.journal');
 * await journal.append(record); // durable once this resolves
 */
export class ChargeJournal {
  /** Charges not yet written to PostgreSQL, in order. */
  private readonly unapplied = new Map<string, ChargeRecord>();
  /**
   * Charges that cost something whose spendable amount in the gate was not yet told
   * (`GateKeeper.release` marks them).
   */
  private readonly unreported = new Map<string, ChargeRecord>();
  /**
   * The last checkpoint of each stream still running (`checkpoint`), kept when the file is
   * rewritten.
   */
  private readonly checkpoints = new Map<string, ChargeRecord>();
  /** The charge appended last (`newestPending`). */
  private newest: string | null = null;
  private waiters: Array<() => void> = [];
  /**
   * Streams the earlier run did not finish, charged at `open` from their last checkpoint
   * (`readJournalText`).
   */
  recoveredStreams = 0;
  /** How lines reach the file (group commit, marks); null in memory. */
  private readonly writer: JournalWriter | null;

  private constructor(file: string | null, roomBytes: number) {
    this.writer = file ? new JournalWriter(file, roomBytes, () => this.wake()) : null;
  }

  /**
   * Opens the journal (a path, or null for memory only) and reads what an earlier run left.
   * `roomBytes`: the room made ahead of the lines at a time (`ROOM_BYTES`), smaller in tests.
   */
  static async open(file: string | null, { roomBytes = ROOM_BYTES } = {}): Promise<ChargeJournal> {
    if (!file) return new ChargeJournal(null, roomBytes);
    const text = await JournalFile.read(file);
    const journal = new ChargeJournal(file, roomBytes);
    const { charges, applied, reported, recovered } = readJournalText(text);
    journal.recoveredStreams = recovered;
    for (const charge of charges) {
      if (!applied.has(charge.id)) journal.unapplied.set(charge.id, charge);
      journal.newest = charge.id;
      if (!reported.has(charge.id) && charge.cost > 0n) journal.unreported.set(charge.id, charge);
    }
    await journal.rewrite();
    return journal;
  }

  /**
   * Makes a charge durable; resolves once it is on disk (or at once, in
   * memory). `alone`: no other billed call is under way, so no other charge
   * could share the write; then, when no write is under way either, the
   * append is one synchronous write on the main thread: no trip through
   * libuv's thread pool (at one connection, 2.6 thread runs and one write a
   * request fewer), for a stall of the event loop as long as the disk's sync,
   * while the average sync stays within ALONE_WRITE_BUDGET_MS.
   */
  append(record: ChargeRecord, { alone = false } = {}): Promise<void> {
    this.checkpoints.delete(record.id);
    this.unapplied.set(record.id, record);
    this.newest = record.id;
    // A charge of nothing (a cache hit, a free model) changes no spendable amount: nothing to
    // report.
    if (record.cost > 0n) this.unreported.set(record.id, record);
    const line = chargeLine(record);
    if (alone && this.writer?.writeAlone(line)) return Promise.resolve();
    return this.write(line);
  }

  /**
   * Makes a running stream's charge so far durable (`StreamCheckpoints`): should this process die
   * before the stream's own charge is appended, the next `open` charges this. It shares the next
   * write, as a charge does, but nothing waits for it, and the applier does not see it: the
   * stream's charge replaces it.
   */
  checkpoint(record: ChargeRecord): void {
    if (!this.writer) return;
    this.checkpoints.set(record.id, record);
    // A checkpoint that cannot be written loses only itself: the charge, or the next checkpoint,
    // comes after it.
    void this.write(checkpointLine(record)).catch(() => {});
  }

  /**
   * Forgets a running call's checkpoints, for a call whose checkpointed work is billed nothing (a
   * JSON call's attempt its engine broke off, `requests/json-answer.ts`): a line says so, so that
   * the next `open` does not charge the last of them. A later checkpoint of the same call counts
   * again.
   */
  dropCheckpoint(id: string): void {
    if (!this.writer || !this.checkpoints.delete(id)) return;
    void this.write(droppedLine(id)).catch(() => {});
  }

  /** Charges still to be written to PostgreSQL (oldest first, at most `max`). */
  pending(max = Number.POSITIVE_INFINITY): ChargeRecord[] {
    const out: ChargeRecord[] = [];
    for (const record of this.unapplied.values()) {
      if (out.length >= max) break;
      out.push(record);
    }
    return out;
  }

  get pendingCount(): number {
    return this.unapplied.size;
  }

  /**
   * The charge appended last, while it is not yet in PostgreSQL; else null.
   * Charges are written oldest first (`pending`), so once it is written,
   * every charge appended before it is too.
   */
  get newestPending(): string | null {
    return this.newest !== null && this.unapplied.has(this.newest) ? this.newest : null;
  }

  isPending(id: string): boolean {
    return this.unapplied.has(id);
  }

  /**
   * Charges whose wallet in Redis may not know of them (a settle that failed, or a run that died
   * before it).
   */
  unreportedCharges(): ChargeRecord[] {
    return [...this.unreported.values()];
  }

  /** Resolves when a charge is appended (the applier waits here when there is nothing to do). */
  whenAppended(): Promise<void> {
    return this.unapplied.size > 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Wakes whoever waits in `whenAppended` (the applier, when it stops). */
  wake(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Marks charges as written to PostgreSQL. */
  async markApplied(ids: string[]): Promise<void> {
    for (const id of ids) this.unapplied.delete(id);
    await this.mark({ applied: ids });
  }

  /** Marks charges as taken into their wallet in Redis. */
  async markReported(ids: string[]): Promise<void> {
    for (const id of ids) this.unreported.delete(id);
    await this.mark({ reported: ids });
  }

  async close(): Promise<void> {
    await this.writer?.close();
  }

  /**
   * Marks are not synced (see the class comment) and need no write of their own
   * (`JournalWriter.addMarks`). A mark lost to a crash costs only a repeated, harmless step.
   */
  private async mark(entry: { applied: string[] } | { reported: string[] }): Promise<void> {
    if (!this.writer) return;
    this.writer.addMarks(entry);
    if (this.writer.size > COMPACT_BYTES && this.unapplied.size + this.unreported.size < 10_000) await this.rewrite();
  }

  /** Queues a line for the next write (a charge wakes the applier); resolves once it is durable. */
  private write(line: string): Promise<void> {
    if (line.startsWith('{"charge"')) this.wake();
    return this.writer ? this.writer.write(line) : Promise.resolve();
  }

  /** Starts the file afresh with only what is still open (a crash leaves the old file or this one). */
  private async rewrite(): Promise<void> {
    await this.writer?.replaceFile(() => journalText(this.unapplied, this.unreported, this.checkpoints.values()));
  }
}
