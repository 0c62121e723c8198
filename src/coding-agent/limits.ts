/**
 * The bounds `tollgate code` holds the model's requests to. The model's tool
 * calls are untrusted input: each bound is named (its config-file key) in the
 * message that enforces it, and each can be changed in the config file
 * (docs/coding-agent.md lists them).
 *
 * @example
 * const limits = { ...DEFAULT_LIMITS, tool_output_chars: 10_000 };
 */
export interface AgentLimits {
  /** Lines a read answers when the model gives no limit, and at most. */
  read_lines: number;
  /** The largest file the read, edit and search tools open, in bytes. */
  file_bytes: number;
  /**
   * Characters of a tool's answer (a command's output, a listing) kept; the rest is cut, and the
   * cut said.
   */
  tool_output_chars: number;
  /** Seconds a command may run before it is stopped. */
  shell_timeout_seconds: number;
  /** Entries of the file tree given to the model at the start, and of one listing. */
  tree_entries: number;
  /** Matching lines one search answers. */
  search_matches: number;
  /** Model calls one task may make before the agent stops and asks. */
  max_steps: number;
  /** The share of the model's context (in percent) at which the session is compacted. */
  compact_percent: number;
  /**
   * The most tokens one answer may have (`max_tokens`); also held to the context left and to the
   * wallet.
   */
  max_output_tokens: number;
  /** A call the wallet cannot pay this many output tokens of is not started. */
  min_output_tokens: number;
  /**
   * Seconds an MCP server has to start and list its tools before it is named as failed and left
   * out.
   */
  mcp_start_seconds: number;
  /** Seconds one MCP tool call may take before it is given up. */
  mcp_call_seconds: number;
  /**
   * The largest message read from an MCP server over stdio, in bytes (a larger one closes the
   * server).
   */
  mcp_message_bytes: number;
  /** MCP tools offered to the model, all servers together (the rest are left out, and said). */
  mcp_tools: number;
}

export const DEFAULT_LIMITS: AgentLimits = {
  read_lines: 2000,
  file_bytes: 1_048_576,
  tool_output_chars: 30_000,
  shell_timeout_seconds: 120,
  tree_entries: 200,
  search_matches: 200,
  max_steps: 50,
  compact_percent: 80,
  max_output_tokens: 8192,
  min_output_tokens: 256,
  mcp_start_seconds: 30,
  mcp_call_seconds: 120,
  mcp_message_bytes: 4 * 1_048_576,
  mcp_tools: 100,
};

const MAXIMA: AgentLimits = {
  read_lines: 100_000,
  file_bytes: 64 * 1_048_576,
  tool_output_chars: 1_000_000,
  shell_timeout_seconds: 86_400,
  tree_entries: 10_000,
  search_matches: 10_000,
  max_steps: 10_000,
  compact_percent: 95,
  max_output_tokens: 1_000_000,
  min_output_tokens: 100_000,
  mcp_start_seconds: 600,
  mcp_call_seconds: 86_400,
  mcp_message_bytes: 64 * 1_048_576,
  mcp_tools: 1000,
};

/**
 * The limits of a config file's `limits` object over the defaults; a value out of range is an error
 * naming its key.
 */
export function limitsFrom(value: unknown): AgentLimits {
  const limits = { ...DEFAULT_LIMITS };
  if (value === undefined) return limits;
  if (typeof value !== 'object' || value === null) throw new Error('"limits" must be an object');
  for (const [key, raw] of Object.entries(value)) {
    if (!(key in DEFAULT_LIMITS))
      throw new Error(`unknown limit "${key}" (known: ${Object.keys(DEFAULT_LIMITS).join(', ')})`);
    const name = key as keyof AgentLimits;
    if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 1 || raw > MAXIMA[name])
      throw new Error(`limits.${key} must be a whole number from 1 to ${MAXIMA[name]}`);
    limits[name] = raw;
  }
  return limits;
}
