import type { Answer, Scope } from './approval.js';
import type { AgentStop } from './model.js';

/** One model call's figures, as shown after it and in stream-json. */
export interface TurnFigures {
  promptTokens: number;
  /**
   * Of `promptTokens`, those the engine read from its prefix cache (billed at the cached-input
   * price).
   */
  cachedTokens: number;
  completionTokens: number;
  /** Null when the gateway lists no price for the model. */
  costNanos: bigint | null;
  sessionNanos: bigint;
  currency: string;
  requestId: string | null;
  /** The call's max_tokens, and the most it could cost (the gateway's hold; null without a price). */
  maxTokens: number;
  worstNanos: bigint | null;
}

/** How a task ended. */
export interface Outcome {
  status: 'done' | 'cut' | 'cancelled' | 'stopped' | 'steps';
  /** The model's last text. */
  text: string;
  stop?: AgentStop;
}

/**
 * Where the agent shows what happens: a terminal (view-terminal.ts) or a
 * script's stdout (view-headless.ts). Everything from the model reaches a
 * terminal through `clean` (render.ts) there, never raw.
 */
export interface View {
  thinking(on: boolean): void;
  text(delta: string): void;
  reasoning(delta: string): void;
  /** The model's streamed answer is over (a newline, the spinner gone). */
  answered(): void;
  waiting(seconds: number, message: string): void;
  tool(name: string, title: string, preview?: string): void;
  toolResult(name: string, result: string, ok: boolean): void;
  turn(figures: TurnFigures): void;
  notice(text: string): void;
  /**
   * Asks the person: yes, yes for this session (offered when `scope` is given: what it would
   * cover), or no; 'no' when declined, cancelled, or no one can be asked. "No, and do this instead"
   * throws `Instead` (ask.ts), a ToolRefusal carrying the person's words to the model.
   */
  ask(question: string, signal: AbortSignal, scope: Scope | null): Promise<Answer>;
}
