import type { ToolKind } from './tools/index.js';
import { type PreparedCall, ToolRefusal } from './tools/types.js';

/**
 * Approval modes (Gemini CLI's names): `ask` reads run, every edit and
 * command asks; `auto-edit` edits apply, commands (and MCP tools) ask; `yolo` nothing in the
 * project asks; `plan` read-only tools only. In every mode a path outside
 * the project asks: yolo is about the project, not the rest of the machine.
 */
export const MODES = ['ask', 'auto-edit', 'yolo', 'plan'] as const;
export type Mode = (typeof MODES)[number];

export type Verdict = { outcome: 'run' } | { outcome: 'ask'; question: string } | { outcome: 'refuse'; reason: string };

/**
 * What happens to a call of `kind` in `mode`, touching `outside` paths.
 *
 * @example
 * decide('auto-edit', 'command', []); // { outcome: 'ask', question: 'Run this command?' }
 */
export function decide(mode: Mode, kind: ToolKind, outside: string[]): Verdict {
  if (mode === 'plan' && kind !== 'read')
    return { outcome: 'refuse', reason: 'plan mode: only reading tools run; describe the change instead' };
  if (outside.length > 0)
    return { outcome: 'ask', question: `Allow access outside the project (${outside.join(', ')})?` };
  if (kind === 'read' || mode === 'yolo') return { outcome: 'run' };
  if (kind === 'edit')
    return mode === 'auto-edit' ? { outcome: 'run' } : { outcome: 'ask', question: 'Apply this change?' };
  return { outcome: 'ask', question: kind === 'mcp' ? 'Call this MCP tool?' : 'Run this command?' };
}

export function isMode(text: string): text is Mode {
  return (MODES as readonly string[]).includes(text);
}

/**
 * The person's answer to a question: this once, for the rest of the session (the scope asked
 * about), or not.
 */
export type Answer = 'yes' | 'session' | 'no';

/** What "yes for this session" covers: a tool (`edit_file`), or a command's prefix (`npm test`). */
export interface Scope {
  key: string;
  /** As the question says it: `edit_file`, `commands starting with "npm test"`. */
  label: string;
}

/**
 * Characters that chain, redirect or substitute in `sh`: a command with one is never allowed by
 * prefix.
 */
const SHELL_CONTROL = /[;&|<>`$()\n\\]/;

/**
 * The scope a "yes for this session" would cover for a call, or null when
 * none is offered: a command that chains or redirects (`npm test; rm -rf x`
 * must not pass as `npm test`). A command's prefix is its first two words
 * (`npm test`, `sh test.sh`), or its only word.
 *
 * @example
 * scopeOf('run_command', 'npm test -- --watch'); // { key: 'command:npm test', label: 'commands starting with "npm test"' }
 */
export function scopeOf(tool: string, command: string | undefined): Scope | null {
  if (command === undefined) return { key: `tool:${tool}`, label: tool };
  if (SHELL_CONTROL.test(command)) return null;
  const words = command.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return null;
  const prefix = words.slice(0, 2).join(' ');
  return { key: `command:${prefix}`, label: `commands starting with "${prefix}"` };
}

/**
 * The scopes the person said "yes for this session" to. A command is
 * allowed when it has no shell control character and its words start with
 * an allowed prefix's words (`npm test` allows `npm test -- --watch`).
 */
export class SessionApprovals {
  private readonly keys = new Set<string>();

  allow(scope: Scope): void {
    this.keys.add(scope.key);
  }

  allows(tool: string, command: string | undefined): boolean {
    if (command === undefined) return this.keys.has(`tool:${tool}`);
    if (SHELL_CONTROL.test(command)) return false;
    const words = command.trim().split(/\s+/).filter(Boolean);
    for (let n = 1; n <= Math.min(2, words.length); n++)
      if (this.keys.has(`command:${words.slice(0, n).join(' ')}`)) return true;
    return false;
  }

  clear(): void {
    this.keys.clear();
  }
}

/**
 * A question to the person (the view's `ask`): `scope` is what a "yes for this session" would
 * cover.
 */
export type Ask = (question: string, signal: AbortSignal, scope: Scope | null) => Promise<Answer>;

/**
 * A prepared call through its mode: run, refused (a `ToolRefusal`, its reason the model's answer),
 * or asked, unless the person said "yes for this session" to the tool (or the command's prefix)
 * already. A call outside the project is asked every time: a session's yes is about the project.
 *
 * @example
 * await approveCall({ mode: 'ask', approvals, ask: view.ask }, 'run_command', call, signal);
 */
export async function approveCall(
  by: { mode: Mode; approvals: SessionApprovals; ask: Ask },
  name: string,
  call: Pick<PreparedCall, 'kind' | 'outside' | 'command'>,
  signal: AbortSignal,
): Promise<void> {
  const verdict = decide(by.mode, call.kind, call.outside);
  if (verdict.outcome === 'refuse') throw new ToolRefusal(verdict.reason);
  if (verdict.outcome === 'run') return;
  if (call.outside.length === 0 && by.approvals.allows(name, call.command)) return;
  const scope = call.outside.length === 0 ? scopeOf(name, call.command) : null;
  const answer = await by.ask(verdict.question, signal, scope);
  if (answer === 'no') throw new ToolRefusal('the user declined this call');
  if (answer === 'session' && scope) by.approvals.allow(scope);
}
