import { spawn } from 'node:child_process';
import { type PreparedCall, text, type ToolContext, whole } from './types.js';

/**
 * run_command: `sh -c` in the project folder, stdout and stderr together,
 * stopped (its whole process group) after `timeout_seconds` or the
 * `shell_timeout_seconds` limit, or when the person presses Ctrl-C. The
 * output is cut to `tool_output_chars`, the cut said.
 */
export function prepareShell(ctx: ToolContext, args: Record<string, unknown>): PreparedCall {
  const command = text(args, 'command');
  const limit = ctx.limits.shell_timeout_seconds;
  const seconds = Math.min(whole(args, 'timeout_seconds', limit) || limit, limit);
  return {
    kind: 'command',
    title: `$ ${command}`,
    outside: [],
    command,
    run: (signal) => runCommand(ctx, command, seconds, signal),
  };
}

function runCommand(ctx: ToolContext, command: string, seconds: number, signal: AbortSignal): Promise<string> {
  const max = ctx.limits.tool_output_chars;
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], {
      cwd: ctx.root,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Kept: the first `max` characters and a rolling last `max`; the middle is cut.
    let head = '';
    let tail = '';
    let total = 0;
    const take = (chunk: Buffer) => {
      const part = chunk.toString('utf8');
      total += part.length;
      if (head.length < max) head += part.slice(0, max - head.length);
      tail = (tail + part).slice(-max);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    let stopped = '';
    const stop = (why: string) => {
      stopped ||= why;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(
      () => stop(`stopped after ${seconds} s (shell_timeout_seconds or timeout_seconds)`),
      seconds * 1000,
    );
    const onAbort = () => stop('stopped: the person cancelled it');
    signal.addEventListener('abort', onAbort, { once: true });
    child.on('error', (error) => take(Buffer.from(`cannot start: ${error.message}\n`)));
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      const kept = total <= max ? head : cutAround(head, tail, total, max);
      const status = stopped || (sig ? `killed by ${sig}` : `exit code ${code}`);
      resolve(`${kept}${kept.endsWith('\n') || kept === '' ? '' : '\n'}[${status}]`);
    });
  });
}

// Like render.ts's cut, from the kept ends of an output too long to keep whole.
function cutAround(head: string, tail: string, total: number, max: number): string {
  const first = Math.floor(max / 2);
  return `${head.slice(0, first)}\n[… ${total - max} characters cut here: output is limited to ${max} characters (tool_output_chars) …]\n${tail.slice(-(max - first))}`;
}
