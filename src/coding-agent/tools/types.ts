import type { ChatCompletionFunctionTool } from 'openai/resources/chat/completions';
import type { AgentLimits } from '../limits.js';
import type { Paint } from '../render.js';

/**
 * What a tool call does, which decides whether it asks (see approval.ts); `mcp`: a tool of an MCP
 * server.
 */
export type ToolKind = 'read' | 'edit' | 'command' | 'mcp';

/** The MCP servers (../mcp.ts), as the agent sees them. */
export interface McpTools {
  /** Starts the configured servers; `confirm` asks the person (null: no one to ask). */
  start(notice: (text: string) => void, confirm: ((question: string) => Promise<boolean>) | null): Promise<void>;
  /** One line a started server, for `/mcp`. */
  summary(): string[];
  tools(): ChatCompletionFunctionTool[];
  has(name: string): boolean;
  call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<string>;
}

export interface ToolContext {
  /** The project folder: where paths start and commands run. */
  root: string;
  limits: AgentLimits;
  paint: Paint;
  /** The MCP servers' tools, when any started. */
  mcp?: McpTools;
}

/**
 * A tool call checked and ready: what it is (for the approval and the
 * screen) and how to carry it out. Preparing reads but never changes
 * anything, so an edit's diff is shown before it is applied.
 */
export interface PreparedCall {
  kind: ToolKind;
  /** One line for the person: `read src/app.ts`, `$ npm test`. */
  title: string;
  /** Shown before asking: a coloured diff, or nothing. */
  preview?: string;
  /** Paths outside the project the call touches (each needs the person's yes). */
  outside: string[];
  /** A command's text (run_command): "yes for this session" covers its prefix, not the tool. */
  command?: string;
  /** The files the call changes (absolute): their content is kept before it runs, for `/undo`. */
  writes?: string[];
  run(signal: AbortSignal): Promise<string>;
}

/** A call refused before it ran; the message (its reason) is the model's answer. */
export class ToolRefusal extends Error {
  override name = 'ToolRefusal';
}

/** Reads a string argument of a tool call. */
export function text(args: Record<string, unknown>, name: string, options: { optional?: boolean } = {}): string {
  const value = args[name];
  if (value === undefined && options.optional) return '';
  if (typeof value !== 'string') throw new ToolRefusal(`"${name}" must be a string`);
  return value;
}

/** Reads a whole-number argument of a tool call, or the fallback. */
export function whole(args: Record<string, unknown>, name: string, fallback: number): number {
  const value = args[name];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    throw new ToolRefusal(`"${name}" must be a whole number`);
  return value;
}
