import { Readable, Writable } from 'node:stream';

/**
 * PostgreSQL's binary COPY format, for the blob store's chunks: written and read as bytes, never
 * as the hex text postgres.js makes of a `bytea` parameter or result (two bytes of a string on
 * V8's heap for each byte, garbage at once; a 200 MB upload piled up 100 MB of it).
 * https://www.postgresql.org/docs/current/sql-copy.html#id-1.9.3.55.9.4
 */

/** `PGCOPY\n\377\r\n\0`, then flags and header extension length, both 0. */
const HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
/** A field count of -1: no more tuples. */
const TRAILER = Buffer.from([0xff, 0xff]);

/**
 * A whole COPY FROM STDIN (FORMAT binary) of one `blob_chunks (blob_id, seq, data)` row: the head
 * up to the data, then the data itself (not copied), then the trailer.
 */
export function chunkRowCopy(blobId: string, seq: number, data: Buffer): Buffer[] {
  const id = Buffer.from(blobId, 'utf8');
  const head = Buffer.alloc(2 + 4 + id.length + 4 + 4 + 4);
  let at = head.writeInt16BE(3, 0);
  at = head.writeInt32BE(id.length, at);
  at += id.copy(head, at);
  at = head.writeInt32BE(4, at);
  at = head.writeInt32BE(seq, at);
  head.writeInt32BE(data.length, at);
  return [HEADER, head, data, TRAILER];
}

/**
 * The one `bytea` field of the one row a COPY TO STDOUT (FORMAT binary) of `select data …` gave
 * (its CopyData messages joined); null when it gave no row.
 */
export function copiedField(copied: Buffer): Buffer | null {
  if (copied.length < HEADER.length + 2 || !copied.subarray(0, 11).equals(HEADER.subarray(0, 11)))
    throw new Error('not a binary COPY');
  const at = HEADER.length + copied.readInt32BE(15);
  const fields = copied.readInt16BE(at);
  if (fields === -1) return null;
  if (fields !== 1) throw new Error(`a binary COPY row of ${fields} fields, not 1`);
  const length = copied.readInt32BE(at + 2);
  if (length < 0) throw new Error('a binary COPY row of a null field');
  const start = at + 6;
  if (start + length > copied.length) throw new Error('a binary COPY cut short');
  return copied.subarray(start, start + length);
}

/** A postgres.js COPY query (`sql.unsafe('copy …')`), and how it settles (postgres.js 3.4). */
interface CopyQuery {
  readable(): Promise<unknown>;
  writable(): Promise<unknown>;
  resolve: (value: unknown) => void;
}

/**
 * Runs a COPY of one row to its end: `feed` writes it (FROM STDIN), or what it sends is gathered
 * (TO STDOUT). Settles once, when the database says the COPY is done or failed. postgres.js's own
 * streams do not, for a COPY this small and whole: a COPY FROM that fails once its data is sent
 * (a row refused, a connection lost) never finishes its stream, and a COPY TO whose last row
 * comes in the same read as its end leaves the connection paused for good (the stream asked for
 * more no longer exists). Here the COPY's query settles as any query does, at the end, and a row
 * read is gathered as it comes, never pausing the connection (one chunk, which is read whole).
 */
export async function runCopy(query: object, feed?: (into: Writable) => void): Promise<Buffer[]> {
  const copy = query as CopyQuery;
  const parts: Buffer[] = [];
  const resolve = copy.resolve;
  copy.resolve = (value) => {
    if (value instanceof Readable) value.push = (part: Buffer | null) => (part !== null && parts.push(part), true);
    else if (value instanceof Writable) feed!(value);
    else resolve(value);
  };
  await (feed ? copy.writable() : copy.readable());
  return parts;
}
