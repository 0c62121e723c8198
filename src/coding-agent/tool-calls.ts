import { approveCall, type Mode, type SessionApprovals } from './approval.js';
import type { Checkpoints } from './checkpoints.js';
import { prepare, type ToolContext, ToolRefusal } from './tools/index.js';
import type { View } from './view.js';

/**
 * What a tool call of a turn runs with: the loop's (loop.ts) tools, view, mode, approvals,
 * checkpoints and log.
 */
export interface ToolTurn {
  tools: ToolContext;
  view: View;
  mode: Mode;
  approvals: SessionApprovals;
  checkpoints: Checkpoints;
  /** The calls and their results, for `/expand` (the last `TOOL_LOG` kept, in memory only). */
  toolLog: { title: string; result: string }[];
}

const TOOL_LOG = 50;

/**
 * One tool call of a turn: prepared (refused with its reason if it cannot
 * be), approved per the mode (approval.ts), the files it writes kept for
 * `/undo` (checkpoints.ts), run. Answers what the model is told: the result,
 * or `refused: …`.
 *
 * @example
 * const result = await runToolCall(turn, 'read_file', '{"path":"README.md"}', signal);
 */
export async function runToolCall(turn: ToolTurn, name: string, args: string, signal: AbortSignal): Promise<string> {
  const { view, tools } = turn;
  try {
    const call = await prepare(tools, name, args);
    view.tool(name, call.title, call.preview);
    const ask: View['ask'] = (question, stop, scope) => view.ask(question, stop, scope);
    await approveCall({ mode: turn.mode, approvals: turn.approvals, ask }, name, call, signal);
    if (call.writes) await turn.checkpoints.keep(call.writes);
    const result = await call.run(signal);
    turn.toolLog.push({ title: call.title, result });
    if (turn.toolLog.length > TOOL_LOG) turn.toolLog.shift();
    view.toolResult(name, result, true);
    return result;
  } catch (error) {
    if (!(error instanceof ToolRefusal)) throw error;
    view.toolResult(name, `refused: ${error.message}`, false);
    return `refused: ${error.message}`;
  }
}
