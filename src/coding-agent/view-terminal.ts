import { money } from './cost.js';
import { markdownStream } from './markdown.js';
import { clean, type Paint, spinner } from './render.js';
import type { TurnFigures, View } from './view.js';

/** Characters of a result's first line shown under its call (`/expand` shows all of it). */
const RESULT_WIDTH = 160;

/**
 * The interactive screen: text as it streams, reasoning dimmed, a spinner
 * until the first token, each tool call with its diff, figures after each
 * model call. `ask` is the prompt's question (interactive.ts).
 *
 * @example
 * const view = terminalView((s) => process.stdout.write(s), painter(true), true, ask);
 */
export function terminalView(write: (text: string) => void, paint: Paint, isTty: boolean, ask: View['ask']): View {
  const spin = spinner(write, isTty);
  const markdown = markdownStream((text) => put(text));
  let state: 'idle' | 'reasoning' | 'text' = 'idle';
  let atLineStart = true;
  const put = (text: string) => {
    if (text === '') return;
    spin.stop();
    write(text);
    atLineStart = text.endsWith('\n');
  };
  const line = (text: string) => {
    if (!atLineStart) put('\n');
    put(`${text}\n`);
  };
  return {
    thinking: (on) => (on ? spin.start('waiting for the model… (Ctrl-C cancels)') : spin.stop()),
    reasoning(delta) {
      if (state !== 'reasoning') put(paint.dim(atLineStart ? 'thinking: ' : '\nthinking: '));
      state = 'reasoning';
      put(paint.dim(clean(delta)));
    },
    text(delta) {
      if (state === 'reasoning') put('\n');
      state = 'text';
      spin.stop();
      markdown.push(clean(delta));
    },
    answered() {
      spin.stop();
      markdown.end();
      if (!atLineStart) put('\n');
      state = 'idle';
    },
    waiting: (seconds, message) =>
      line(paint.yellow(`waiting ${seconds} s as the gateway asks (Retry-After): ${clean(message)}`)),
    tool(_name, title, preview) {
      line(paint.bold(`● ${clean(title)}`));
      if (preview) line(preview);
    },
    toolResult(_name, result, ok) {
      // One line under the call: its first line and how many more (the model gets all; /expand
      // shows it).
      const lines = clean(result).trimEnd().split('\n');
      const more = lines.length > 1 ? paint.dim(` (+${lines.length - 1} lines, /expand)`) : '';
      const first = `  ⎿ ${lines[0]!.slice(0, RESULT_WIDTH)}`;
      line((ok ? paint.dim(first) : paint.red(first)) + more);
    },
    turn: (figures) => line(paint.dim(figuresLine(figures))),
    notice: (text) => line(paint.yellow(clean(text))),
    ask,
  };
}

/** `↳ 1200 in (1024 cached) · 56 out · 0.0002136 USD · session 0.00064 USD` */
export function figuresLine(f: TurnFigures): string {
  const cost = f.costNanos === null ? 'no price listed' : money(f.costNanos, f.currency);
  const cached = f.cachedTokens > 0 ? ` (${f.cachedTokens} cached)` : '';
  return `↳ ${f.promptTokens} in${cached} · ${f.completionTokens} out · ${cost} · session ${money(f.sessionNanos, f.currency)}`;
}
