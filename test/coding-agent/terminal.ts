import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { requireServices } from '../helpers/services.js';
import { until } from '../helpers/wait.js';

/**
 * tmux's path, or null when it is not installed (the tmux tests skip, and fail under
 * REQUIRE_SERVICES=1).
 */
export const tmuxPath =
  ['/usr/bin/tmux', '/usr/local/bin/tmux'].find((file) => {
    try {
      execFileSync(file, ['-V']);
      return true;
    } catch {
      return false;
    }
  }) ?? null;
export const tmuxMissing = tmuxPath ? null : 'tmux is not installed (apt-get install tmux)';
if (tmuxMissing && requireServices) throw new Error(`REQUIRE_SERVICES=1 but the tmux tests cannot run: ${tmuxMissing}`);

/**
 * A terminal (200x50 unless `size` says) on a tmux server of its own, a plain shell in it, driven
 * as a person would.
 */
export interface Terminal {
  screen(colours?: boolean): string;
  /** The screen row by row as drawn: a line that wrapped is two rows here (`screen` joins them). */
  rows(): string;
  type(text: string): void;
  press(...keys: string[]): void;
  /** Pastes text as a terminal does: bracketed when the program asked for it. */
  paste(text: string): void;
  shows(what: string, text: string | RegExp, timeout?: number): Promise<unknown>;
  close(): void;
}

export function openTerminal(
  name: string,
  cwd: string,
  env: Record<string, string>,
  size = { columns: 200, rows: 50 },
): Terminal {
  const socket = `tollgate-${name}-${process.pid}`;
  // A person's terminal: without the CI variable of the run that tests it, which turns colours off
  // (supports-color) where no user's terminal would. The server takes its environment from the
  // command that starts it.
  const { CI: _ci, ...personal } = process.env;
  const tmux = (...args: string[]) =>
    execFileSync(tmuxPath!, ['-L', socket, '-f', '/dev/null', ...args], { encoding: 'utf8', env: personal });
  tmux(
    'new-session',
    '-d',
    '-s',
    'agent',
    '-x',
    String(size.columns),
    '-y',
    String(size.rows),
    '-c',
    cwd,
    ...Object.entries({ TERM: 'xterm-256color', PS1: '$ ', ...env }).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
    'bash --norc --noprofile',
  );
  const screen = (colours = false) =>
    tmux('capture-pane', '-p', '-J', ...(colours ? ['-e'] : []), '-S', '-500', '-t', 'agent');
  return {
    screen,
    rows: () => tmux('capture-pane', '-p', '-S', '-500', '-t', 'agent'),
    type: (text) => void tmux('send-keys', '-t', 'agent', '-l', text),
    press: (...keys) => void tmux('send-keys', '-t', 'agent', ...keys),
    paste(text) {
      tmux('set-buffer', '-b', 'paste', text);
      tmux('paste-buffer', '-p', '-b', 'paste', '-t', 'agent');
    },
    shows: (what, text, timeout = 15_000) =>
      until(what, () => (typeof text === 'string' ? screen().includes(text) : text.test(screen())), {
        timeout,
        detail: () => screen(),
      }),
    close() {
      try {
        // kill-server leaves the socket file behind: removed too.
        const socketPath = tmux('display-message', '-p', '#{socket_path}').trim();
        tmux('kill-server');
        rmSync(socketPath, { force: true });
      } catch {
        // Already gone.
      }
    },
  };
}
