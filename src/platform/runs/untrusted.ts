import { constants } from 'node:fs';
import { open, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';

// What a run hands back (its state, its outputs, its log) is the run's to
// shape: read only as a bounded stream of bytes, never as a path the gateway
// follows, and stored only as text PostgreSQL accepts.

/**
 * How reading what a run left ended: its bytes, nothing there, something that is not a regular
 * file, or more than the bound.
 */
export type Produced =
  | { kind: 'bytes'; bytes: Buffer }
  | { kind: 'absent' }
  | { kind: 'not-regular' }
  | { kind: 'too-large' }
  | { kind: 'failed'; why: string };

/**
 * Collects a stream's chunks up to `maxBytes`; past it, keeps nothing more
 * and calls `onOver` once (the caller stops the stream's producer), so
 * whatever the producer prints the collector holds at most `maxBytes`.
 *
 * @example
 * const sink = new BoundedBytes(1024 * 1024, () => stop.abort());
 * child.stdout.on('data', (chunk) => sink.push(chunk));
 */
export class BoundedBytes {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  over = false;

  constructor(
    private readonly maxBytes: number,
    private readonly onOver: () => void,
  ) {}

  push(chunk: Buffer): void {
    if (this.over) return;
    this.size += chunk.length;
    if (this.size > this.maxBytes) {
      this.over = true;
      this.chunks.length = 0;
      this.onOver();
      return;
    }
    this.chunks.push(chunk);
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/**
 * A `sh` script, run inside the sandbox, that prints `file` (relative to
 * its working folder) to standard output, at most `maxBytes + 1` bytes so
 * that one too many says it is too large; exit 3 when it is not a regular
 * file (a link, a FIFO, a device), 4 when there is none. Inside, a link
 * can only reach what the sandbox holds; outside, nothing is opened.
 */
export function printFileScript(file: string, maxBytes: number): string {
  const quoted = `'${file.replace(/'/g, "'\\''")}'`;
  return `if [ -L ${quoted} ]; then exit 3; fi; if [ ! -e ${quoted} ]; then exit 4; fi; if [ ! -f ${quoted} ]; then exit 3; fi; exec head -c ${maxBytes + 1} -- ${quoted}`;
}

/** What `printFileScript`'s run ended as, from its exit code and what it printed. */
export function producedByScript(code: number | null, sink: BoundedBytes, maxBytes: number): Produced {
  if (sink.over) return { kind: 'too-large' };
  if (code === 3) return { kind: 'not-regular' };
  if (code === 4) return { kind: 'absent' };
  if (code !== 0) return { kind: 'failed', why: code === null ? 'it was stopped' : `exit status ${code}` };
  const bytes = sink.bytes();
  return bytes.length > maxBytes ? { kind: 'too-large' } : { kind: 'bytes', bytes };
}

/**
 * Reads a file the run could have replaced, on the host (the `none`
 * sandbox, where there is no inside to print it from): opened without
 * following a link at its last component (O_NOFOLLOW) nor blocking (a FIFO),
 * a regular file only (fstat on what was opened), the path the descriptor
 * names in /proc equal to `relative` under `root` (the gateway's own folder;
 * a link in a folder between them changes that path),
 * its size checked before a byte is read, and the read bounded in bytes and
 * time.
 *
 * @example
 * const state = await readHostFile('/var/tmp/tollgate-runs/run_1-abc', 'work/module/terraform.tfstate', 32 << 20, 5000);
 */
export async function readHostFile(
  root: string,
  relative: string,
  maxBytes: number,
  timeoutMs: number,
): Promise<Produced> {
  const file = path.join(await realpath(root), relative);
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'absent' };
    return code === 'ELOOP' || code === 'ENXIO'
      ? { kind: 'not-regular' }
      : { kind: 'failed', why: code ?? 'unreadable' };
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return { kind: 'not-regular' };
    if ((await readlink(`/proc/self/fd/${handle.fd}`)) !== file) return { kind: 'not-regular' };
    if (stat.size > maxBytes) return { kind: 'too-large' };
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    const deadline = Date.now() + timeoutMs;
    while (length < buffer.length) {
      if (Date.now() > deadline) return { kind: 'failed', why: `not read within ${timeoutMs} ms` };
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    return length > maxBytes
      ? { kind: 'too-large' }
      : { kind: 'bytes', bytes: Buffer.from(buffer.subarray(0, length)) };
  } finally {
    await handle.close();
  }
}

/** Half of a UTF-16 pair without its other half: no UTF-8 encodes it. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Text as PostgreSQL stores it: a NUL (which no `text` or `jsonb` value may
 * hold) written as the six characters `\u0000`, a lone surrogate (not
 * UTF-8) as U+FFFD. Never an error, whatever the run printed.
 *
 * @example
 * storable('a\u0000b'); // 'a\\u0000b'
 */
export function storable(text: string): string {
  return text.replaceAll('\u0000', '\\u0000').replace(LONE_SURROGATE, '\ufffd');
}

/** `storable` throughout a JSON value: every string, and every key. */
export function storableValue(value: unknown): unknown {
  if (typeof value === 'string') return storable(value);
  if (Array.isArray(value)) return value.map(storableValue);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [storable(key), storableValue(inner)]));
  return value;
}
