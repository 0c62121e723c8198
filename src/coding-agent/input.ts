import { readdirSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';

/** Shown in the prompt where a pasted or typed new line is; the task gets a real newline there. */
export const NEWLINE_MARK = '\u2424';

const PASTE_START = '\u001b[200~';
const PASTE_END = '\u001b[201~';

/**
 * The terminal's input for Node's readline, with bracketed paste (the
 * terminal marks a paste, so its newlines stay in the line instead of
 * sending it) and a key for a new line: Ctrl-J, or Alt-Enter. The newlines
 * become `NEWLINE_MARK` on the prompt line; `taskText` turns them back.
 * readline stays the line editor (history, cursor keys, Ctrl-C, completion):
 * it is Node's own, and only the paste needed adding.
 *
 * @example
 * const rl = createInterface({ input: terminalInput(process.stdin), output: process.stdout, terminal: true });
 */
export function terminalInput(stdin: NodeJS.ReadStream, stdout: NodeJS.WriteStream): PassThrough & { restore(): void } {
  const out = new PassThrough() as PassThrough & { restore(): void };
  let inPaste = false;
  let carry = '';
  const onData = (chunk: Buffer) => {
    let text = carry + chunk.toString('utf8');
    carry = '';
    while (text !== '') {
      const marker = inPaste ? PASTE_END : PASTE_START;
      const at = text.indexOf(marker);
      const part = at === -1 ? text : text.slice(0, at);
      // A marker cut between two reads: keep its start for the next one.
      const cut = at === -1 ? partialMarkerAt(part, marker) : part.length;
      const piece = part.slice(0, cut);
      out.write(
        inPaste
          ? piece.replace(/\r\n|\r|\n/g, NEWLINE_MARK)
          : piece.replaceAll('\u001b\r', NEWLINE_MARK).replaceAll('\n', NEWLINE_MARK),
      );
      if (at === -1) {
        carry = part.slice(cut);
        break;
      }
      inPaste = !inPaste;
      text = text.slice(at + marker.length);
    }
  };
  stdin.setRawMode?.(true);
  stdin.on('data', onData);
  stdout.write('\u001b[?2004h');
  out.restore = () => {
    stdout.write('\u001b[?2004l');
    stdin.off('data', onData);
    stdin.setRawMode?.(false);
    stdin.pause();
  };
  return out;
}

function partialMarkerAt(text: string, marker: string): number {
  for (let length = Math.min(marker.length - 1, text.length); length > 0; length--)
    if (text.endsWith(marker.slice(0, length))) return text.length - length;
  return text.length;
}

/** The prompt line as the task: the new-line marks back to newlines. */
export function taskText(line: string): string {
  return line.replaceAll(NEWLINE_MARK, '\n');
}

/**
 * readline's completer for `@path` mentions: the entries of the folder the
 * word names, in the project (dot-files when asked for, never node_modules).
 */
export function mentionCompleter(root: string): (line: string) => [string[], string] {
  return (line) => {
    const word = /(?:^|\s)(@[^\s]*)$/.exec(line)?.[1];
    if (!word) return [[], line];
    const typed = word.slice(1);
    const folder = typed.includes('/') ? typed.slice(0, typed.lastIndexOf('/') + 1) : '';
    let entries: { name: string; folder: boolean }[];
    try {
      entries = readdirSync(path.join(root, folder), { withFileTypes: true })
        .filter((e) => e.name !== 'node_modules' && e.name !== '.git')
        .map((e) => ({ name: e.name, folder: e.isDirectory() }));
    } catch {
      return [[], word];
    }
    const namePart = typed.slice(folder.length);
    const hits = entries
      .filter((e) => namePart.startsWith('.') || !e.name.startsWith('.'))
      .map((e) => `@${folder}${e.name}${e.folder ? '/' : ''}`)
      .filter((candidate) => candidate.startsWith(word))
      .sort();
    return [hits, word];
  };
}
