import type { BackgroundStore } from '../../stored-responses/background-store.js';

type Json = Record<string, unknown>;

/** The events read from the store at a time. */
const PAGE = 500;

/** The events that carry the whole response: their output is the response's, whole. */
const WHOLE_RESPONSE: ReadonlySet<string> = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/**
 * A background response's output as far as its kept events go (each event a resumed stream would
 * replay, from the first on): for a job whose replica died, what was generated and streamed before
 * it did.
 *
 * @example
 * const output = await keptOutput(store, 'resp_…'); // [{ type: 'message', status: 'incomplete', … }]
 */
export async function keptOutput(store: BackgroundStore, id: string): Promise<Json[]> {
  const events: string[] = [];
  let after = -1;
  for (;;) {
    const page = await store.eventsAfter(id, after, PAGE);
    for (const kept of page) events.push(kept.event);
    if (page.length < PAGE) return outputOfEvents(events);
    after = page[page.length - 1]!.sequence;
  }
}

/**
 * The output a Responses stream's events make, as a client reading them builds it: each item as
 * `response.output_item.added` opened it, its text, summary or arguments grown by their deltas,
 * and replaced by `response.output_item.done`. An item the events leave unfinished is `incomplete`
 * (OpenAI's status for an item cut off); an event with the whole response gives its output.
 */
export function outputOfEvents(events: readonly string[]): Json[] {
  const output: Json[] = [];
  for (const event of events) {
    const data = dataOf(event);
    if (!data) continue;
    if (WHOLE_RESPONSE.has(data.type as string)) {
      const whole = (data.response as Json | undefined)?.output;
      if (Array.isArray(whole)) return whole as Json[];
      continue;
    }
    const index = data.output_index;
    if (typeof index !== 'number') continue;
    if (data.type === 'response.output_item.added' || data.type === 'response.output_item.done')
      output[index] = structuredClone(data.item as Json);
    else if (output[index]) grow(output[index], data);
  }
  return output.filter((item) => item !== undefined).map(finishedOrCut);
}

/** An item grown by one of its events: a part added, or a delta of its text or arguments. */
function grow(item: Json, data: Json): void {
  switch (data.type) {
    case 'response.content_part.added':
      partsOf(item, 'content')[data.content_index as number] = structuredClone(data.part as Json);
      break;
    case 'response.output_text.delta':
      appendText(partsOf(item, 'content'), data.content_index as number, 'output_text', data.delta);
      break;
    case 'response.reasoning_summary_part.added':
      partsOf(item, 'summary')[data.summary_index as number] = structuredClone(data.part as Json);
      break;
    case 'response.reasoning_summary_text.delta':
      appendText(partsOf(item, 'summary'), data.summary_index as number, 'summary_text', data.delta);
      break;
    case 'response.function_call_arguments.delta':
      item.arguments = `${typeof item.arguments === 'string' ? item.arguments : ''}${String(data.delta)}`;
      break;
  }
}

function partsOf(item: Json, member: 'content' | 'summary'): Json[] {
  if (!Array.isArray(item[member])) item[member] = [];
  return item[member] as Json[];
}

/** A text delta added to its part; a part no event opened is opened as the stream writes it. */
function appendText(parts: Json[], index: number, type: string, delta: unknown): void {
  const part = (parts[index] ??=
    type === 'output_text' ? { type, text: '', annotations: [], logprobs: [] } : { type, text: '' });
  part.text = `${typeof part.text === 'string' ? part.text : ''}${String(delta)}`;
}

/** An item its events finished as they left it; one still in progress, cut off: `incomplete`. */
function finishedOrCut(item: Json): Json {
  if (item.status === 'in_progress') item.status = 'incomplete';
  return item;
}

/** An event's `data:` as JSON; null when it has none or is not JSON. */
function dataOf(event: string): Json | null {
  const start = event.indexOf('data: ');
  if (start === -1) return null;
  const end = event.indexOf('\n', start);
  try {
    return JSON.parse(event.slice(start + 6, end === -1 ? undefined : end)) as Json;
  } catch {
    return null;
  }
}
