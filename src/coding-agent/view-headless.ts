import { formatAmount } from '../gateway/billing/money.js';
import { figuresLine } from './view-terminal.js';
import { clean } from './render.js';
import type { View } from './view.js';

export const OUTPUT_FORMATS = ['text', 'json', 'stream-json'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/**
 * `-p`'s output. `text`: the model's text on stdout, what the agent does on
 * stderr. `json`: one object at the end (headless.ts). `stream-json`: one
 * JSON object a line, as things happen. No one is asked: a call that needs
 * approval is declined, and the mode to pass is said.
 *
 * @example
 * const view = headlessView('stream-json', io);
 */
export function headlessView(
  format: OutputFormat,
  io: { stdout(text: string): void; stderr(text: string): void },
): View {
  const event = (type: string, fields: Record<string, unknown>) => {
    if (format === 'stream-json') io.stdout(`${jsonText({ type, ...fields })}\n`);
  };
  const say = (text: string) => {
    if (format === 'text') io.stderr(`${clean(text)}\n`);
  };
  let textOpen = false;
  return {
    thinking: () => undefined,
    reasoning: (delta) => event('reasoning', { text: delta }),
    text(delta) {
      event('text', { text: delta });
      const shown = clean(delta);
      if (format === 'text') io.stdout(shown);
      if (shown !== '') textOpen = !shown.endsWith('\n');
    },
    answered() {
      if (format === 'text' && textOpen) io.stdout('\n');
      textOpen = false;
    },
    waiting(seconds, message) {
      event('waiting', { seconds, message });
      say(`waiting ${seconds} s as the gateway asks (Retry-After): ${message}`);
    },
    tool(name, title) {
      event('tool_call', { name, title });
      say(`● ${title}`);
    },
    toolResult(name, result, ok) {
      event('tool_result', { name, ok, output: result });
      if (!ok) say(result);
    },
    turn(f) {
      event('turn', {
        prompt_tokens: f.promptTokens,
        cached_tokens: f.cachedTokens,
        completion_tokens: f.completionTokens,
        cost: f.costNanos === null ? null : formatAmount(f.costNanos),
        cost_nanos: f.costNanos?.toString() ?? null,
        currency: f.currency,
        request_id: f.requestId,
        max_tokens: f.maxTokens,
        worst_case_nanos: f.worstNanos?.toString() ?? null,
      });
      say(figuresLine(f));
    },
    notice(text) {
      event('notice', { text });
      say(text);
    },
    ask(question) {
      const text = `${question} No: nobody to ask with -p; pass --approval auto-edit (edits) or yolo (edits and commands) to allow it.`;
      event('notice', { text });
      say(text);
      return Promise.resolve('no' as const);
    },
  };
}

/**
 * JSON with every control character escaped, C1 (U+0080-U+009F, such as the
 * CSI U+009B) and DEL too, and the line and bidirectional separators:
 * `JSON.stringify` escapes only C0, so a model's U+009B would reach a
 * terminal that shows the output raw. Still valid JSON, the same value.
 *
 * @example
 * jsonText({ text: '\u009b31m' }); // '{"text":"\\u009b31m"}'
 */
export function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(
    /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
