/** How much text a chunk of a streamed download gathers before it is sent. */
const CHUNK_CHARS = 64 * 1024;

/**
 * Text made by `parts`, sent as it is made, a chunk at a time and only as fast as the client reads
 * (the stream pulls): memory holds a chunk and what `parts` holds, whatever the download's length.
 * A failure past the first byte cuts the body short (the status is sent already), which a CSV or
 * JSON reader sees as incomplete. A `chunkChars` of 1 sends each part as it comes (a progress
 * line).
 *
 * @example
 * return c.body(textStream(csvLines(columns, rows)), 200, { 'content-type': 'text/csv; charset=utf-8' });
 */
export function textStream(parts: AsyncGenerator<string>, chunkChars = CHUNK_CHARS): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk = '';
      while (chunk.length < chunkChars) {
        const next = await parts.next();
        if (next.done) {
          if (chunk) controller.enqueue(encoder.encode(chunk));
          controller.close();
          return;
        }
        chunk += next.value;
      }
      controller.enqueue(encoder.encode(chunk));
    },
    async cancel() {
      await parts.return(undefined);
    },
  });
}
