import { constants, writeSync } from 'node:fs';
import { type FileHandle, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';

/**
 * The journal is opened with O_DSYNC: each write returns once its data is on
 * the disk, as a write followed by `fdatasync` would, in one system call and
 * one trip through libuv's thread pool instead of two.
 */
const WRITE_DURABLY = constants.O_WRONLY | constants.O_CREAT | constants.O_DSYNC;

/**
 * Lines are written into room made ahead of them: line breaks, written and
 * synced this much at a time, which the reader skips. A write that does not
 * grow the file syncs only its data, not the file's size: on ext4, about 60 µs
 * less a charge than an append of the same line (`bench/journal.ts`).
 */
export const ROOM_BYTES = 1024 * 1024;

/**
 * Room is not tried again for this long after it failed (the disk is full?); lines meanwhile grow
 * the file.
 */
const ROOM_PAUSE_MS = 5_000;

/**
 * The charge journal's file (`ChargeJournal` decides what goes in it): lines
 * written durably at the end of what is written, into room made ahead of them
 * (`ROOM_BYTES` of line breaks, which the reader skips). One writer at a
 * time: the caller never starts a write before the last one ended.
 *
 * A write that fails may leave part of itself on the disk; the next starts
 * past it, after a line break, so that the cut line is a line of its own,
 * which the reader skips (it is no JSON).
 */
export class JournalFile {
  /** A write failed, perhaps mid-line: the next starts with a line break. */
  private lineCut = false;
  private roomPausedUntil = 0;

  private constructor(
    private readonly file: string,
    private handle: FileHandle | null,
    /** Where the next line goes: the bytes before it, the lines and whatever failed writes left. */
    private end: number,
    /** The file's size as last written and synced; past `end` is room. */
    private room: number,
    private readonly roomBytes: number,
  ) {}

  /** What the file at `file` holds, without its room; '' when there is no file. */
  static async read(file: string): Promise<string> {
    const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) =>
      error.code === 'ENOENT' ? '' : Promise.reject(error),
    );
    return withoutRoom(text);
  }

  /**
   * Starts the file afresh with `text` and room after it: written to a new file, synced, then
   * renamed over the old one, and the folder synced, so that a crash leaves either the old file or
   * this one whole.
   */
  static async start(file: string, text: string, roomBytes = ROOM_BYTES): Promise<JournalFile> {
    const lines = Buffer.from(text);
    const next = `${file}.next`;
    const handle = await open(next, 'w', 0o600);
    try {
      await handle.write(Buffer.concat([lines, Buffer.alloc(roomBytes, 0x0a)]));
      await handle.datasync();
    } finally {
      await handle.close();
    }
    await rename(next, file);
    // The rename made durable too: else a crash could bring back the old file, without the lines
    // written to this one.
    await open(path.dirname(file), 'r').then((folder) => folder.sync().finally(() => folder.close()));
    const opened = await open(file, WRITE_DURABLY, 0o600);
    return new JournalFile(file, opened, lines.length, lines.length + roomBytes, roomBytes);
  }

  /** The bytes written so far (the lines, and what failed writes left). */
  get size(): number {
    return this.end;
  }

  /** Whether the room left is low enough to make more, while nothing waits for a write. */
  get roomLow(): boolean {
    return this.room - this.end < this.roomBytes / 4;
  }

  /**
   * Writes `bytes` at once, on this thread, in one synchronous write, if the room holds them and no
   * failed write must be stepped past first. False when nothing was written in full: the caller
   * writes them with `write`.
   */
  writeNow(bytes: Buffer): boolean {
    if (!this.handle || this.lineCut || this.end + bytes.length > this.room) return false;
    let written = 0;
    try {
      while (written < bytes.length) {
        written += writeSync(this.handle.fd, bytes, written, bytes.length - written, this.end + written);
      }
    } catch {
      if (written > 0) {
        this.end += written;
        this.lineCut = true;
      }
      return false;
    }
    this.end += bytes.length;
    return true;
  }

  /** Writes `text` at the end, making room first if it does not fit; durable when it resolves. */
  async write(text: string): Promise<void> {
    if (!text) return;
    const handle = await this.opened();
    const bytes = Buffer.from(this.lineCut ? `\n${text}` : text);
    if (this.end + bytes.length > this.room) await this.makeRoom();
    const at = this.end;
    // Should the write fail, whatever part of it was written stays: the next starts past it.
    this.end += bytes.length;
    this.lineCut = true;
    await writeAllAt(handle, bytes, at);
    this.lineCut = false;
  }

  /**
   * Writes `roomBytes` of line breaks past the end, synced, so that the next lines' writes do not
   * grow the file. When that fails, lines grow the file as they are written, and room is not tried
   * again for a while.
   */
  async makeRoom(): Promise<void> {
    if (performance.now() < this.roomPausedUntil) return;
    const handle = await this.opened();
    const at = Math.max(this.room, this.end);
    try {
      await writeAllAt(handle, Buffer.alloc(this.roomBytes, 0x0a), at);
      this.room = at + this.roomBytes;
    } catch {
      this.roomPausedUntil = performance.now() + ROOM_PAUSE_MS;
    }
  }

  /** The file's handle, opened again if `close` closed it. */
  private async opened(): Promise<FileHandle> {
    this.handle ??= await open(this.file, WRITE_DURABLY, 0o600);
    return this.handle;
  }

  async close(): Promise<void> {
    await this.handle?.close();
    this.handle = null;
  }
}

/** Writes all of `bytes` at `at` (a write may take less than it was given). */
async function writeAllAt(handle: FileHandle, bytes: Buffer, at: number): Promise<void> {
  let written = 0;
  while (written < bytes.length) {
    written += (await handle.write(bytes, written, bytes.length - written, at + written)).bytesWritten;
  }
}

/**
 * A journal's text without the room after its lines (line breaks, or zeros where a failed write
 * left a hole).
 */
function withoutRoom(text: string): string {
  let end = text.length;
  while (end > 0 && (text.charCodeAt(end - 1) === 0x0a || text.charCodeAt(end - 1) === 0)) end--;
  return text.slice(0, end);
}
