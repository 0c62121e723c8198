import type { ToolKind } from './tools/index.js';

/**
 * Approval modes (Gemini CLI's names): `ask` reads run, every edit and
 * command asks; `auto-edit` edits apply, commands ask; `yolo` nothing in the
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
  return { outcome: 'ask', question: 'Run this command?' };
}

export function isMode(text: string): text is Mode {
  return (MODES as readonly string[]).includes(text);
}
