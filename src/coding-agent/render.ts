import { printable } from '../surfaces/cli/output.js';

/**
 * What the terminal shows. The model's text is untrusted for a terminal (an
 * escape sequence could retitle the window, move the cursor, rewrite what was
 * printed or hide text), so `clean` removes every control character but the
 * newline and the tab before anything of it is printed; the agent's own
 * colours are added after.
 *
 * @example
 * out.write(paint.dim(clean(reasoningDelta)));
 */
export function clean(text: string): string {
  // The CLI's one rule for untrusted text (whole escape sequences, C0 but tab and newline, DEL,
  // C1), and the bidirectional overrides, which could make a shown diff read other than it applies.
  return printable(text).replace(/[\u202a-\u202e\u2066-\u2069]/g, '');
}

export interface Paint {
  dim(text: string): string;
  bold(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

/** The agent's colours, or none (not a terminal, or NO_COLOR set). */
export function painter(enabled: boolean): Paint {
  const wrap = (open: number, close: number) => (text: string) =>
    enabled ? `\x1b[${open}m${text}\x1b[${close}m` : text;
  return {
    dim: wrap(2, 22),
    bold: wrap(1, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    cyan: wrap(36, 39),
  };
}

/**
 * Cuts text to `max` characters, saying where and how much was cut (the model and the person both
 * read it).
 */
export function cut(text: string, max: number, limitName: string): string {
  if (text.length <= max) return text;
  const head = Math.floor(max / 2);
  const tail = max - head;
  const dropped = text.length - max;
  return `${text.slice(0, head)}\n[… ${dropped} characters cut here: output is limited to ${max} characters (${limitName}) …]\n${text.slice(text.length - tail)}`;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * A spinner on one line of a terminal while waiting for the first token; it
 * erases itself when stopped. Nothing is drawn when not a terminal.
 */
export function spinner(write: (text: string) => void, enabled: boolean): { start(label: string): void; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  return {
    start(label) {
      if (!enabled || timer) return;
      let frame = 0;
      const draw = () => write(`\r${FRAMES[frame++ % FRAMES.length]} ${label}`);
      draw();
      timer = setInterval(draw, 80);
    },
    stop() {
      if (!timer) return;
      clearInterval(timer);
      timer = undefined;
      write('\r\x1b[2K');
    },
  };
}
