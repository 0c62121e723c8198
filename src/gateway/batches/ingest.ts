import type { Readable } from 'node:stream';
import type { LineStore, NewLine } from './line-store.js';
import { lineRequestId } from './objects.js';

/** Lines written per statement as the input file is read. */
const LINES_PER_WRITE = 500;

/**
 * Reads a batch's input file as it streams from the blob store, a line at a time, and writes its
 * requests as the batch's lines, LINES_PER_WRITE at a time: memory holds one page of lines, never
 * the file. The file was checked line by line when it was uploaded (`files/batch-lines.ts`); a
 * line whose `url` is not the batch's endpoint, or that cannot be read as a request after all, is
 * written as an error line. `renew` is called
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
  const base = { batchId: batch.id, line, requestId: lineRequestId(batch.id, line) };
  let request: { custom_id: string; url: string; body: unknown };
  let body: string;
  try {
    request = JSON.parse(text) as typeof request;
    body = JSON.stringify(request.body);
  } catch {
    // The upload's check refuses such a line; a file checked under an older or looser check may
    // still hold one (too deep to copy, say). It is an error line: the batch runs the rest.
    const message = `Line ${line + 1} of the input file could not be read as a request.`;
    return {
      ...base,
      customId: customIdOf(text),
      url: '',
      body: 'null',
      status: 'failed',
      error: invalidLine(message),
    };
  }
  const read = { ...base, customId: request.custom_id, url: request.url, body };
  if (request.url === batch.endpoint) return { ...read, status: 'waiting' };
  const message = `This line's url ${request.url} is not the batch's endpoint ${batch.endpoint}.`;
  return { ...read, status: 'failed', error: JSON.stringify({ code: 'invalid_url', message }) };
}

const invalidLine = (message: string) => JSON.stringify({ code: 'invalid_request', message });

/** A line's `custom_id` found without parsing it whole (it could not be), else empty. */
function customIdOf(text: string): string {
  const found = /"custom_id"\s*:\s*"((?:[^"\\]|\\.){1,512})"/.exec(text.slice(0, 4096));
  if (!found) return '';
  try {
    return JSON.parse(`"${found[1]}"`) as string;
  } catch {
    return '';
  }
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
