import { badRequest, invalidBody } from './errors.js';
import { isObject, type JsonObject } from './fields.js';

// `tools` and `tool_choice` as vLLM reads them. Only `function` tools can be
// called; other types (Codex's `namespace`, `web_search`, ...) are skipped,
// not refused. "auto" needs the model's tool parser (vLLM's
// --enable-auto-tool-choice --tool-call-parser); "required" and a named
// function are structured output and work without it.

/** A function the model may call. */
export interface ToolSpec {
  name: string;
  /** Its JSON schema; absent allows any object. */
  parameters: JsonObject;
}

/** What `tool_choice` lets the model do. */
export type ToolMode = 'none' | 'auto' | 'required' | { name: string };

export interface ToolPlan {
  tools: ToolSpec[];
  mode: ToolMode;
}

const NO_TOOLS: ToolPlan = { tools: [], mode: 'none' };

/**
 * Reads `tools` and `tool_choice`, refusing what vLLM refuses.
 *
 * @example
 * readTools({ tools: [{ type: 'function', function: { name: 'f' } }] }, 'hermes'); // { tools: [...], mode: 'auto' }
 */
export function readTools(body: JsonObject, toolParser: string | null): ToolPlan {
  const raw = body.tools;
  const choice = body.tool_choice;
  if (raw !== undefined && raw !== null && !Array.isArray(raw))
    throw invalidBody(['tools'], 'list_type', 'Input should be a valid list');
  // vLLM's default choice is "auto" when the list has tools, "none" when it is absent or empty.
  const given = Array.isArray(raw) && raw.length > 0;
  if (!given && (choice === undefined || choice === null || choice === 'none' || choice === 'auto')) return NO_TOOLS;
  const tools = functionTools(Array.isArray(raw) ? raw : []);
  const mode = readMode(choice, given);
  if (mode === 'none') return { tools, mode };
  if (mode !== 'auto' && !given) throw badRequest('When using `tool_choice`, `tools` must be set.', 'tool_choice');
  if (typeof mode === 'object' && !tools.some((t) => t.name === mode.name)) {
    throw badRequest(
      `The tool specified in \`tool_choice\` does not match any of the specified \`tools\`: ${mode.name}`,
      'tool_choice',
    );
  }
  if (mode === 'auto' && toolParser === null) {
    throw badRequest(
      '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
      'tool_choice',
    );
  }
  return { tools, mode };
}

function functionTools(raw: unknown[]): ToolSpec[] {
  const tools: ToolSpec[] = [];
  for (let i = 0; i < raw.length; i++) {
    const tool = raw[i];
    if (!isObject(tool)) throw invalidBody(['tools', i], 'model_type', 'Input should be a valid dictionary');
    if (tool.type !== undefined && tool.type !== 'function') continue;
    const fn = tool.function;
    if (!isObject(fn)) throw invalidBody(['tools', i, 'function'], 'missing', 'Field required');
    if (typeof fn.name !== 'string')
      throw invalidBody(['tools', i, 'function', 'name'], 'string_type', 'Input should be a valid string');
    tools.push({ name: fn.name, parameters: isObject(fn.parameters) ? fn.parameters : { type: 'object' } });
  }
  return tools;
}

function readMode(choice: unknown, toolsGiven: boolean): ToolMode {
  if (choice === undefined || choice === null) return toolsGiven ? 'auto' : 'none';
  if (choice === 'none' || choice === 'auto' || choice === 'required') return choice;
  if (isObject(choice)) {
    const fn = choice.function;
    if (choice.type === 'function' && isObject(fn) && typeof fn.name === 'string') return { name: fn.name };
    // Other shapes (`allowed_tools`, custom tools) leave the choice to the model.
    return 'auto';
  }
  throw invalidBody(['tool_choice'], 'literal_error', "Input should be 'none', 'auto' or 'required'");
}

/**
 * The tools this turn calls, by name: none when the choice is "none", when
 * nothing can be called, or (for "auto") once the conversation's last
 * message is a tool result, so an agent's loop ends with a text answer.
 *
 * @example
 * callsFor(plan, messages, hash); // ['get_weather']
 */
export function callsFor(plan: ToolPlan, messages: readonly unknown[], hash: number): ToolSpec[] {
  const { tools, mode } = plan;
  if (mode === 'none' || tools.length === 0) return [];
  if (typeof mode === 'object') return tools.filter((t) => t.name === mode.name).slice(0, 1);
  if (mode === 'auto') {
    const last = messages.at(-1);
    if (!isObject(last) || last.role !== 'user') return [];
  }
  return [tools[hash % tools.length] as ToolSpec];
}
