import { clean, cut } from '../render.js';
import type { PreparedCall, ToolContext } from './types.js';

/**
 * Characters of a call's arguments shown on its line, and at most before asking (the server gets
 * them whole).
 */
const TITLE_ARGUMENTS = 120;
const SHOWN_ARGUMENTS = 2000;

/**
 * A call of an MCP server's tool (`mcp__SERVER__TOOL`): asked like a command
 * (approval.ts, kind `mcp`), its arguments shown before the question. What
 * the server answers is untrusted like a command's output: cut to
 * `tool_output_chars`, and cleaned of control characters by the views.
 *
 * @example
 * const call = prepareMcp(ctx, 'mcp__notes__write_note', { text: 'hi' });
 */
export function prepareMcp(ctx: ToolContext, name: string, args: Record<string, unknown>): PreparedCall {
  const compact = JSON.stringify(args);
  // Arguments too long for the title's line are shown whole (up to SHOWN_ARGUMENTS) before the
  // question.
  return {
    kind: 'mcp',
    title: `${name} ${cut(compact, TITLE_ARGUMENTS, 'shown')}`.replace(/\n/g, ' '),
    preview:
      compact.length > TITLE_ARGUMENTS
        ? clean(cut(JSON.stringify(args, null, 2), SHOWN_ARGUMENTS, 'shown arguments'))
        : undefined,
    outside: [],
    run: (signal) => ctx.mcp!.call(name, args, signal),
  };
}

type Content =
  | { type: 'text'; text: string }
  | { type: 'image' | 'audio'; mimeType: string }
  | { type: 'resource'; resource: { uri: string; text?: string; blob?: string } }
  | { type: 'resource_link'; uri: string; name: string };

/**
 * A tool result as text for the model: its text parts, a line for each
 * image, sound or binary resource (not sent on), the structured content when
 * there is no text; `error: ` first when the server says the call failed.
 *
 * @example
 * mcpAnswer({ content: [{ type: 'text', text: 'wrote notes.txt' }] }); // 'wrote notes.txt'
 */
export function mcpAnswer(result: Record<string, unknown>): string {
  const parts = (Array.isArray(result.content) ? (result.content as Content[]) : []).map((part) => {
    switch (part.type) {
      case 'text':
        return part.text;
      case 'image':
      case 'audio':
        return `[${part.type} (${part.mimeType}) not shown: the agent passes on text only]`;
      case 'resource':
        return part.resource.text ?? `[binary resource ${part.resource.uri} not shown]`;
      case 'resource_link':
        return `[resource ${part.name}: ${part.uri}]`;
      default:
        return `[content of type ${JSON.stringify((part as { type: unknown }).type)} not shown]`;
    }
  });
  if (parts.length === 0 && result.structuredContent !== undefined)
    parts.push(JSON.stringify(result.structuredContent));
  const text = parts.join('\n') || '(no output)';
  return result.isError === true ? `error: ${text}` : text;
}
