import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { money } from './cost.js';
import { clean, type Paint } from './render.js';
import type { Session } from './sessions.js';

/** Lines of a resumed conversation shown on screen (the latest; the earlier ones counted). */
export const TRANSCRIPT_LINES = 40;
/** Characters of a transcript line. */
const WIDTH = 160;

/**
 * The earlier conversation, compact, as `--continue` and `/resume` show it:
 * each task (its first lines, attachments left out), each answer's first
 * line, each tool call one line. Everything goes through `clean`: it is the
 * model's text and the project's.
 *
 * @example
 * say(transcript(session, paint));
 */
export function transcript(session: Session, paint: Paint): string {
  // A call the person declined (or that was refused) says so: its tool answer starts with
  // "refused:".
  const refused = new Set(
    session.messages.flatMap((m) =>
      m.role === 'tool' && typeof m.content === 'string' && m.content.startsWith('refused:') ? [m.tool_call_id] : [],
    ),
  );
  const lines = session.messages.flatMap((message) => linesOf(message, paint, refused));
  const dropped = lines.length - TRANSCRIPT_LINES;
  const shown = dropped > 0 ? [paint.dim(`… ${dropped} earlier lines`), ...lines.slice(dropped)] : lines;
  return [paint.dim(`── earlier in this session (${session.title ? clean(session.title) : 'untitled'}) ──`), ...shown]
    .concat(paint.dim('── resumed ──'))
    .join('\n');
}

function linesOf(message: ChatCompletionMessageParam, paint: Paint, refused: Set<string>): string[] {
  const content = typeof message.content === 'string' ? message.content : '';
  if (message.role === 'user') {
    if (content.startsWith('The conversation so far was compacted'))
      return [paint.dim('(the conversation was compacted here)')];
    const task = content.replace(/^\[The user undid[^\n]*\]\n\n/, '').split('\n\n<file path=')[0]!;
    const taskLines = task.split('\n');
    const more = taskLines.length > 3 ? paint.dim(` (+${taskLines.length - 3} lines)`) : '';
    return taskLines.slice(0, 3).map((line, i) => `${i === 0 ? '› ' : '  '}${short(line)}` + (i === 2 ? more : ''));
  }
  if (message.role !== 'assistant') return [];
  const lines: string[] = [];
  const first = content.split('\n').find((line) => line.trim() !== '');
  if (first !== undefined) lines.push(`  ${short(first)}`);
  for (const call of message.tool_calls ?? [])
    if (call.type === 'function')
      lines.push(
        paint.dim(
          `  ● ${short(callTitle(call.function.name, call.function.arguments))}${refused.has(call.id) ? ' (refused)' : ''}`,
        ),
      );
  return lines;
}

/** A tool call as the screen showed it: `read calc.js`, `$ npm test`. */
function callTitle(name: string, argumentsJson: string): string {
  let args: Record<string, unknown> = {};
  try {
    args = JSON.parse(argumentsJson) as Record<string, unknown>;
  } catch {
    // Shown by name only.
  }
  const field = (key: string) => (typeof args[key] === 'string' ? args[key] : '');
  switch (name) {
    case 'read_file':
      return `read ${field('path')}`;
    case 'list_files':
      return `list ${field('path') || '.'}`;
    case 'search':
      return `search ${field('pattern')}`;
    case 'edit_file':
      return `edit ${field('path')}`;
    case 'write_file':
      return `write ${field('path')}`;
    case 'run_command':
      return `$ ${field('command')}`;
    default:
      return name;
  }
}

function short(line: string): string {
  const text = clean(line).replace(/\t/g, ' ');
  return text.length > WIDTH ? `${text.slice(0, WIDTH - 1)}…` : text;
}

/** `1  2026-11-26 05:10  0.0012 USD  "fix the test"`: a session as the picker lists it. */
export function pickerLine(index: number, session: Session, currency: string): string {
  const date = session.updatedAt.slice(0, 16).replace('T', ' ');
  const cost = money(BigInt(session.totals.costNanos), currency);
  return `${String(index).padStart(3)}  ${date}  ${cost.padStart(14)}  ${short(session.title || '(no task)')}`;
}
