import { Args, GLOBAL_OPTIONS, parseCommandLine } from './args.js';
import { type ApiRequest, type ClientOptions, createClient } from './client.js';
import type { Command } from './commands/command.js';
import { closestCommand, COMMANDS, findCommand, usageOf } from './commands/index.js';
import packageJson from '../../../package.json' with { type: 'json' };
import { CODE_USAGE, runCode } from '../../coding-agent/index.js';
import { ApiError, CliError, UsageError } from './errors.js';
import { keySettingsIfGiven, resolveKeySettings, resolveSettings } from './settings.js';
import type { Input, Io } from './terminal.js';

export type { Io } from './terminal.js';
import { printable, printableJson } from './output.js';

const processIo: Io = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stderrIsTerminal: process.stderr.isTTY === true,
  // Read at each line drawn: a terminal resized meanwhile is drawn at its new width.
  stderrColumns: () => process.stderr.columns,
};

/**
 * Runs one `tollgate` command line and answers its exit code: 0 done, 1 the
 * command failed (API error, gateway unreachable), 2 bad usage (nothing sent).
 * With `--json` stdout gets exactly the API's response body (nothing for a
 * 204 No Content), or the one body a command makes of several answers.
 *
 * @example
 * process.exitCode = await main(['orgs', 'create', '--name', 'Acme', '--json']);
 */
export async function main(argv: string[], io: Io = processIo): Promise<number> {
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V')) return print(io, packageJson.version);
  // The coding agent has flags of its own (-p, -m) and no API request to render: it is its own
  // program.
  if (argv[0] === 'code') return runCode(argv.slice(1), io);
  const { words, rest } = splitCommandWords(argv);
  const [group, action] = words;
  if (group === undefined || group === 'help' || rest.includes('--help') || rest.includes('-h')) {
    const command = findCommand(group, action);
    if (command) return print(io, `usage: ${usageOf(command)}\n\n${command.summary}\n`);
    return help(io, rest.includes('--json'));
  }
  const command = findCommand(group, action);
  if (!command) {
    // Two lines, whatever was typed: what was not understood, and the nearest command (its usage
    // line).
    io.stderr(
      `error: unknown command "${words.join(' ')}"\ndid you mean: ${usageOf(closestCommand(words))}   (tollgate help lists every command)\n`,
    );
    return 2;
  }
  try {
    const { values, positionals } = parseCommandLine(rest, command.options ?? {});
    const args = new Args(values, positionals);
    args.positionalCount(command.positionals ?? 0);
    // Lazily: reading process.stdin is for the commands that need it.
    const input: Input = {
      stderr: (text) => io.stderr(text),
      get stdin() {
        return io.stdin ?? process.stdin;
      },
    };
    const built = await command.request(args, input);
    const requests = Array.isArray(built) ? built : [built];
    const client = createClient(await clientOptions(command, args));
    const shown = progressLine(command, io);
    const bodies = await Promise.all(
      requests.map((request) => client.send(shown ? { ...request, lines: shown.show } : request)),
    ).finally(() => shown?.clear());
    const answer = command.combine ? command.combine(bodies) : bodies[0];
    const followUp = { send: (request: ApiRequest) => client.send(request), progress: shown?.show ?? (() => {}) };
    const body = command.receive ? await command.receive(answer, args, followUp).finally(() => shown?.clear()) : answer;
    const failure = command.failure?.(body) ?? null;
    if (values.json === true && body !== null) print(io, printableJson(JSON.stringify(body, null, 2)));
    // The exit code says the same with and without --json: a script may read either.
    if (failure !== null) throw new CliError(failure);
    return values.json === true ? 0 : print(io, printable(command.render(body, args)));
  } catch (error) {
    return report(error, io, command);
  }
}

/**
 * A command's progress, one line on stderr rewritten in place when it is a terminal (else nothing
 * shown). The line is kept short of the terminal's last column: a line that wraps is no longer
 * rewritten by `\r`, and each redraw would leave one more row behind. At the end it is erased, or
 * (`progressStays`) its last state kept, ended by a newline.
 */
function progressLine(command: Command, io: Io) {
  if (!command.progress) return null;
  let shown = false;
  return {
    show: (event: unknown) => {
      if (!io.stderrIsTerminal) return;
      const room = Math.max(1, (io.stderrColumns?.() || 80) - 1);
      io.stderr(`\r${printable(command.progress!(event, room)).slice(0, room)}\x1b[K`);
      shown = true;
    },
    clear: () => {
      if (shown) io.stderr(command.progressStays ? '\n' : '\r\x1b[K');
      shown = false;
    },
  };
}

/** Where a command's requests go, with which credential. */
async function clientOptions(command: Command, args: Args): Promise<ClientOptions> {
  const [url, apiKey, token] = [args.optional('url'), args.optional('api-key'), args.optional('token')];
  if (command.api === 'public') return { ...resolveKeySettings({ url, apiKey }), base: '/v1' };
  const key = command.api === 'key-or-operator' ? keySettingsIfGiven({ url, apiKey, token }) : null;
  return key ? { ...key, base: '/v1' } : resolveSettings({ url, token });
}

/** The first two words select the command; global flags (`--json`, `--url X`) may come before them. */
function splitCommandWords(argv: string[]): { words: string[]; rest: string[] } {
  const leading: string[] = [];
  let i = 0;
  while (i < argv.length && argv[i]!.startsWith('-')) {
    const width = GLOBAL_OPTIONS[argv[i]!.slice(2) as keyof typeof GLOBAL_OPTIONS]?.type === 'string' ? 2 : 1;
    leading.push(...argv.slice(i, i + width));
    i += width;
  }
  const words: string[] = [];
  while (words.length < 2 && i < argv.length && !argv[i]!.startsWith('-')) words.push(argv[i++]!);
  return { words, rest: [...leading, ...argv.slice(i)] };
}

function print(io: Io, text: string): number {
  io.stdout(text.endsWith('\n') ? text : `${text}\n`);
  return 0;
}

function help(io: Io, json: boolean): number {
  if (json)
    return print(
      io,
      JSON.stringify(
        { object: 'help', commands: COMMANDS.map((c) => ({ usage: usageOf(c), summary: c.summary })) },
        null,
        2,
      ),
    );
  const lines = COMMANDS.map((c) => `  ${usageOf(c)}\n      ${c.summary}`);
  return print(
    io,
    `tollgate: manage organizations, users, wallets, keys, models and prices of a Tollgate gateway.\n\nCommands:\n${lines.join('\n')}\n
Passwords are never arguments: pipe one with --password-stdin, or run in a terminal to be asked for it.
\`tollgate models\`, \`stacks\`, \`clusters\` and \`runs\` use an API key (--api-key, else $TOLLGATE_API_KEY), not the operator token; \`tollgate usage\` takes either.
\`tollgate --version\` prints the version.

Options for every command:
  --url URL      the gateway (default $TOLLGATE_URL, else http://127.0.0.1:8080)
  --token T      the operator token (default $TOLLGATE_ADMIN_TOKEN, else $TOLLGATE_DATA_DIR/admin-token)
  --json         print the API's JSON response instead of text
  -h, --help     show usage

The coding agent:
  ${CODE_USAGE.replace(/\n/g, '\n  ')}\n`,
  );
}

function report(error: unknown, io: Io, command: Command): number {
  if (error instanceof UsageError) {
    io.stderr(`error: ${error.message}\nusage: ${usageOf(command)}\n`);
    return 2;
  }
  if (error instanceof ApiError) {
    const details = error.details.map((d) => `\n  ${d.field}: ${d.message}`).join('');
    io.stderr(printable(`error: ${error.message} (${error.code})${details}\n`));
    return 1;
  }
  io.stderr(
    `error: ${error instanceof CliError ? error.message : `unexpected failure: ${error instanceof Error ? error.message : String(error)}`}\n`,
  );
  return 1;
}
