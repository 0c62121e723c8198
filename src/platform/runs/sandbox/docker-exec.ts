import { constants } from 'node:os';
import { type Duplex, Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type Docker from 'dockerode';
import type { ToolExit } from '../runner.js';
import type { SandboxCommand } from './types.js';

// One command's `docker exec` in a run's container, as the run sees it: its output, and how it
// ended.

/**
 * Relays an exec's output until its stream ends: Docker's multiplexed frames split into stdout and
 * stderr, decoded as UTF-8 across chunk boundaries into `onOutput`; stdout goes raw to `onStdout`
 * instead when the command reads it.
 */
export async function relayOutput(
  modem: Docker['modem'],
  stream: Duplex,
  command: Pick<SandboxCommand, 'onOutput' | 'onStdout'>,
): Promise<void> {
  const decoder = new StringDecoder('utf8');
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const text = decoder.write(chunk);
      if (text) command.onOutput(text);
      done();
    },
  });
  const { onStdout } = command;
  modem.demuxStream(
    stream,
    onStdout ? new Writable({ write: (chunk: Buffer, _encoding, done) => done(void onStdout(chunk)) }) : sink,
    sink,
  );
  await new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', () => resolve());
  });
  const rest = decoder.end();
  if (rest) command.onOutput(rest);
}

/** How an exec ended, from its exit code (null: unknown, as after a kill). */
export function exitOf(code: number | null, stopped: boolean): ToolExit {
  // A process ended by a signal exits 128 + its number; a stopped command's is told as the signal,
  // as runTool does.
  if (code === null || (stopped && code > 128))
    return { code: null, signal: signalName(code === null ? constants.signals.SIGKILL : code - 128) };
  return { code, signal: null };
}

function signalName(number: number): NodeJS.Signals {
  return (Object.entries(constants.signals).find(([, value]) => value === number)?.[0] ?? 'SIGKILL') as NodeJS.Signals;
}
