import { callItem } from './answer.js';
import type { ToolNames } from './translate.js';

type Json = Record<string, unknown>;

/** The item being written: its place in `output`, the item, and its text (or arguments) so far. */
export interface OpenItem {
  key: string;
  index: number;
  item: Json;
  text: string;
}

/** How a stream's events are written (`ResponsesWriter`). */
export interface EventWriter {
  event(type: string, fields: string): string;
  at(item: OpenItem): string;
  whole(type: string, data: Json): string;
}

/** The events that close an item: its text or arguments done, its part done, the finished item. */
export function closeEvents(open: OpenItem, w: EventWriter, names: ToolNames): string {
  const { item, text } = open;
  let out = '';
  if (item.type === 'message') {
    const part = { type: 'output_text', text, annotations: [], logprobs: [] };
    out += w.event(
      'response.output_text.done',
      `${w.at(open)},"content_index":0,"text":${JSON.stringify(text)},"logprobs":[]`,
    );
    out += w.event('response.content_part.done', `${w.at(open)},"content_index":0,"part":${JSON.stringify(part)}`);
    Object.assign(item, { status: 'completed', content: [part] });
  } else if (item.type === 'reasoning') {
    const part = { type: 'summary_text', text };
    out += w.event(
      'response.reasoning_summary_text.done',
      `${w.at(open)},"summary_index":0,"text":${JSON.stringify(text)}`,
    );
    out += w.event(
      'response.reasoning_summary_part.done',
      `${w.at(open)},"summary_index":0,"part":${JSON.stringify(part)}`,
    );
    item.summary = [part];
  } else if (item.type === 'function_call') {
    item.arguments = text || '{}';
    item.status = 'completed';
    out += w.event(
      'response.function_call_arguments.done',
      `${w.at(open)},"name":${JSON.stringify(item.name)},"arguments":${JSON.stringify(item.arguments)}`,
    );
  } else {
    // A custom tool's input arrives as the function's JSON arguments: the client gets it unwrapped,
    // whole.
    const done = callItem(item.call_id, flatName(item), text || '{}', names);
    Object.assign(item, { status: 'completed', input: done.input });
    out += w.event('response.custom_tool_call_input.done', `${w.at(open)},"input":${JSON.stringify(item.input)}`);
  }
  return out + w.whole('response.output_item.done', { output_index: open.index, item });
}

function flatName(item: Json): string {
  return typeof item.namespace === 'string' ? `${item.namespace}__${String(item.name)}` : String(item.name);
}
