import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { CliError } from './errors.js';

/** Standard input as the CLI uses it: a stream, a terminal or not. */
export type Stdin = NodeJS.ReadableStream & { isTTY?: boolean };

/** Where a command writes, and reads a password from. */
export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Whether stderr is a terminal, where progress is shown (the process's: `process.stderr.isTTY`). */
  stderrIsTerminal?: boolean;
  /** How wide that terminal is now (the process's: `process.stderr.columns`; 80 when unknown). */
  stderrColumns?(): number | undefined;
  /**
   * Where a password is read or asked (default: the process's stdin); touched only by commands that
   * read one.
   */
  stdin?: Stdin;
}

/**
 * What a command may read besides its flags: standard input, and stderr to
 * ask on (stdout stays for the answer, so `--json` output is never mixed with
 * a prompt). Injected by `main`, so tests can be a terminal.
 *
 * @example
 * const [password] = await askHidden(input, ['Password: ']);
 */
export interface Input {
  readonly stdin: Stdin;
  stderr(text: string): void;
}

/** All of standard input, as UTF-8 text. */
export async function readAll(stdin: Stdin): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Asks each question on stderr and reads one line per answer from a terminal,
 * with echo off: readline handles the keys (raw mode, backspace, Ctrl-C) but
 * writes to a muted output, so what is typed is never shown. No history is
 * kept. Ctrl-C or the end of input fails with `CliError`.
 */
export async function askHidden(input: Input, questions: string[]): Promise<string[]> {
  const muted = new Writable({ write: (_chunk, _encoding, done) => done() });
  const rl = createInterface({ input: input.stdin, output: muted, terminal: true, historySize: 0 });
  // Lines may arrive together (a paste, a test): keep those not yet asked for.
  const lines: string[] = [];
  let waiting: { resolve(line: string): void; reject(error: Error): void } | undefined;
  let failure: Error | undefined;
  const fail = (error: Error) => {
    failure ??= error;
    waiting?.reject(failure);
    waiting = undefined;
  };
  rl.on('line', (line) => {
    if (waiting) {
      waiting.resolve(line);
      waiting = undefined;
    } else lines.push(line);
  });
  rl.on('SIGINT', () => fail(new CliError('cancelled')));
  rl.on('close', () => fail(new CliError('no answer: standard input ended')));
  const next = () =>
    new Promise<string>((resolve, reject) => {
      if (lines.length > 0) resolve(lines.shift()!);
      else if (failure) reject(failure);
      else waiting = { resolve, reject };
    });
  try {
    const answers: string[] = [];
    for (const question of questions) {
      input.stderr(question);
      try {
        answers.push(await next());
      } finally {
        input.stderr('\n'); // the Enter typed was not echoed
      }
    }
    return answers;
  } finally {
    rl.close();
  }
}
