import type { Readable } from 'node:stream';
import type { LineStore, NewLine } from './line-store.js';
import { lineRequestId } from './objects.js';

/** Lines written per statement as the input file is read. */
const LINES_PER_WRITE = 500;

/**
 * Reads a batch's input file as it streams from the blob store, a line at a time, and writes its
 * requests as the batch's lines, LINES_PER_WRITE at a time: memory holds one page of lines, never
 * the file. The file was checked line by line when it was uploaded (`files/batch-lines.ts`); a
 * line whose `url` is not the batch's endpoint is written as an error line. `renew` is called
 * after each write (the batch's lease). The number of requests.
 */
export async function ingestLines(
  bytes: Readable,
  batch: { id: string; endpoint: string },
  lines: LineStore,
  renew: () => Promise<void>,
): Promise<number> {
  let page: NewLine[] = [];
  let count = 0;
  const flush = async () => {
    await lines.insert(page);
    page = [];
    await renew();
  };
  for await (const text of textLines(bytes)) {
    if (text.trim() === '') continue;
    const line = count++;
    page.push(lineOf(text, line, batch));
    if (page.length >= LINES_PER_WRITE) await flush();
  }
  await flush();
  return count;
}

function lineOf(text: string, line: number, batch: { id: string; endpoint: string }): NewLine {
  const request = JSON.parse(text) as { custom_id: string; url: string; body: unknown };
  const base = {
    batchId: batch.id,
    line,
    customId: request.custom_id,
    url: request.url,
    body: JSON.stringify(request.body),
    requestId: lineRequestId(batch.id, line),
  };
  if (request.url === batch.endpoint) return { ...base, status: 'waiting' };
  const message = `This line's url ${request.url} is not the batch's endpoint ${batch.endpoint}.`;
  return { ...base, status: 'failed', error: JSON.stringify({ code: 'invalid_url', message }) };
}

/** The stream's lines (without their line breaks), decoded as UTF-8 across chunk boundaries. */
async function* textLines(bytes: Readable): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let rest = '';
  for await (const chunk of bytes as AsyncIterable<Buffer>) {
    rest += decoder.decode(chunk, { stream: true });
    let start = 0;
    for (let newline = rest.indexOf('\n'); newline !== -1; newline = rest.indexOf('\n', start)) {
      yield rest.slice(start, newline);
      start = newline + 1;
    }
    rest = rest.slice(start);
  }
  rest += decoder.decode();
  if (rest !== '') yield rest;
}
