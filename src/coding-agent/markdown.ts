import { marked } from 'marked';
import { markedTerminal } from 'marked-terminal';

let ready = false;

/**
 * Markdown for a terminal: headings, emphasis, lists, tables, and code
 * blocks highlighted by language, with marked (the common markdown parser)
 * and marked-terminal (its terminal renderer, highlighting through
 * cli-highlight). Text given here has been through `clean` first: the
 * escapes in the result are the renderer's, never the model's.
 *
 * @example
 * write(renderMarkdown('## Done\n\n`npm test` passes.'));
 */
export function renderMarkdown(text: string, width = process.stdout.columns || 100): string {
  if (!ready) {
    marked.use(markedTerminal({ showSectionPrefix: false, reflowText: false, width, tab: 2 }) as never);
    ready = true;
  }
  return marked.parse(text, { async: false }).replace(/\n+$/, '\n');
}

/**
 * Renders a streamed answer a block at a time. The text shows as it comes,
 * plain; when a blank line ends a block (outside a code fence) the plain
 * lines are erased and the block is written rendered, so a paragraph is
 * formatted once complete and a code block once closed; `end` renders the
 * rest. `columns` is the terminal's width, to count the rows to erase.
 */
export function markdownStream(
  write: (text: string) => void,
  render: (text: string) => string = renderMarkdown,
  columns = () => process.stdout.columns || 80,
) {
  let pending = '';
  let block: string[] = [];
  let inFence = false;
  let blocks = 0;
  let shown = '';
  const erase = () => {
    if (shown === '') return;
    const rows = shown.split('\n').reduce((sum, line) => sum + Math.max(1, Math.ceil(line.length / columns())), 0);
    write(`\r${rows > 1 ? `\u001b[${rows - 1}A` : ''}\u001b[J`);
    shown = '';
  };
  const flush = () => {
    const text = block.join('\n');
    block = [];
    erase();
    if (text.trim() !== '') write((blocks++ > 0 ? '\n' : '') + render(text));
    if (pending !== '') {
      write(pending);
      shown = pending;
    }
  };
  return {
    push(delta: string) {
      write(delta);
      shown += delta;
      pending += delta;
      let newline = pending.indexOf('\n');
      while (newline !== -1) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
        block.push(line);
        if (!inFence && line.trim() === '') flush();
        newline = pending.indexOf('\n');
      }
    },
    end() {
      if (pending !== '') block.push(pending);
      pending = '';
      inFence = false;
      flush();
      blocks = 0;
    },
  };
}
