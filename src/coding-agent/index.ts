import OpenAI from 'openai';
import { parseArgs } from 'node:util';
import { ApiError, CliError, UsageError } from '../surfaces/cli/errors.js';
import type { Io } from '../surfaces/cli/terminal.js';
import { projectContext } from './context.js';
import { gatewayOf } from './gateway.js';
import { headless } from './headless.js';
import { interactive, openPrompt } from './interactive.js';
import { WalletGuard } from './budget.js';
import { Agent } from './loop.js';
import { McpServers } from './mcp.js';
import { painter } from './render.js';
import { SessionStore, type Session } from './sessions.js';
import { type AgentSettings, resolveAgentSettings, wantsColour } from './settings.js';
import { headlessView, OUTPUT_FORMATS, type OutputFormat } from './view-headless.js';
import { terminalView } from './view-terminal.js';

export const CODE_USAGE = `usage: tollgate code [-p TASK] [-m MODEL] [--approval ask|auto-edit|yolo|plan] [--output-format text|json|stream-json]
                     [--continue | --resume | --session ID] [--list-sessions] [--sessions-dir DIR] [--url URL] [--api-key KEY]

The coding agent, on your API key: works in the current folder with tools (read, list, search, edit, write, run),
asking before edits and commands (--approval). Without -p it is interactive (/help lists its commands).
Settings: flags, else TOLLGATE_URL / TOLLGATE_API_KEY, else $TOLLGATE_CONFIG_DIR/config.json
(default ~/.config/tollgate/config.json: url, api_key, model, approval, limits). MCP servers: mcp.json in that
folder and the project's .mcp.json (asked before its servers first start). See docs/coding-agent.md.`;

const OPTIONS = {
  prompt: { type: 'string', short: 'p' },
  model: { type: 'string', short: 'm' },
  approval: { type: 'string' },
  'output-format': { type: 'string' },
  continue: { type: 'boolean', short: 'c' },
  resume: { type: 'boolean', short: 'r' },
  session: { type: 'string' },
  'list-sessions': { type: 'boolean' },
  'sessions-dir': { type: 'string' },
  url: { type: 'string' },
  'api-key': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/**
 * `tollgate code`: answers the exit code (0 done, 1 failed, 2 bad usage).
 *
 * @example
 * process.exitCode = await runCode(['-p', 'add a README', '--approval', 'auto-edit'], io);
 */
export async function runCode(argv: string[], io: Io): Promise<number> {
  try {
    const { values } = parseFlags(argv);
    if (values.help) return (io.stdout(`${CODE_USAGE}\n`), 0);
    const format = (values['output-format'] ?? 'text') as OutputFormat;
    if (!OUTPUT_FORMATS.includes(format))
      throw new UsageError(`--output-format must be one of ${OUTPUT_FORMATS.join(', ')}, not "${format}"`);
    if ([values.continue, values.resume, values.session].filter(Boolean).length > 1)
      throw new UsageError('--continue, --resume and --session are alternatives: pass one');
    if (values.resume && values.prompt !== undefined)
      throw new UsageError('--resume asks which session: it is interactive (with -p, use --continue or --session ID)');
    const settings = await resolveAgentSettings({
      url: values.url,
      apiKey: values['api-key'],
      model: values.model,
      approval: values.approval,
      sessionsDir: values['sessions-dir'],
    });
    const store = new SessionStore(settings.sessionsDir);
    if (values['list-sessions']) return listSessions(store, io);
    if (values.prompt === undefined && !process.stdin.isTTY)
      throw new UsageError('the interactive agent needs a terminal: pass the task with -p "TASK"');
    return await start(settings, store, values, format, io);
  } catch (error) {
    return report(error, io);
  }
}

function parseFlags(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: false, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0]);
  }
}

async function start(
  settings: AgentSettings,
  store: SessionStore,
  values: ReturnType<typeof parseFlags>['values'],
  format: OutputFormat,
  io: Io,
): Promise<number> {
  const gateway = gatewayOf(settings);
  const [models, pricing] = await Promise.all([gateway.models(), gateway.prices()]);
  const root = process.cwd();
  const resumed = values.continue
    ? await store.latest(root)
    : values.session
      ? await store.load(values.session)
      : undefined;
  if (values.continue && !resumed)
    throw new CliError(`no session to continue in ${root} (sessions are kept in ${store.folder})`);
  // Its conversation is about that folder's files: here its tools would read and change this
  // folder's.
  if (resumed && resumed.cwd !== root)
    throw new CliError(
      `session ${resumed.id} was started in ${resumed.cwd}, not here: its tools would work on this folder's files. Resume it there: cd ${JSON.stringify(resumed.cwd)} && tollgate code --session ${resumed.id}`,
    );
  const model = values.model ?? resumed?.model ?? settings.model ?? models[0]?.id;
  if (!model) throw new CliError('this key can call no chat model');
  if (!models.some((m) => m.id === model))
    throw new CliError(`the key cannot call "${model}"; its models: ${models.map((m) => m.id).join(', ') || 'none'}`);
  const session: Session = resumed ?? store.create(root, model);
  session.model = model;
  if (!resumed) session.messages.push({ role: 'system', content: await projectContext(root, settings.limits) });
  const interactiveRun = values.prompt === undefined;
  const paint = painter(interactiveRun && wantsColour(Boolean(process.stdout.isTTY)));
  const openai = new OpenAI({
    baseURL: `${settings.url}/v1`,
    apiKey: settings.token,
    maxRetries: 0,
    timeout: 10 * 60_000,
  });
  const contextLengths = new Map(models.map((m) => [m.id, m.contextLength]));
  const mcp = new McpServers(root, settings.configDir, settings.limits);
  const tools = { root, limits: settings.limits, paint, mcp };
  const wallet = new WalletGuard(gateway, settings.limits, settings.walletWarnNanos, pricing.currency);
  // Made in order: the prompt, the view that asks its approvals on it, the agent that shows on the
  // view.
  const prompt = interactiveRun ? openPrompt(root, paint) : null;
  const view = prompt
    ? terminalView((text) => process.stdout.write(text), paint, Boolean(process.stdout.isTTY), prompt.ask)
    : headlessView(format, io);
  const agent = new Agent(
    {
      openai,
      gateway,
      store,
      tools,
      view,
      prices: pricing.byModel,
      currency: pricing.currency,
      contextLengths,
      wallet,
    },
    session,
    settings.approval,
  );
  try {
    if (prompt) return await interactive(agent, paint, prompt, resumed ? 'resumed' : values.resume ? 'pick' : 'new');
    // Nobody to ask with -p: a project's servers start only if trusted before (mcp.ts).
    await mcp.start((text) => view.notice(text), null);
    return await headless(agent, values.prompt!, format, io);
  } finally {
    prompt?.close();
    await mcp.close();
  }
}

async function listSessions(store: SessionStore, io: Io): Promise<number> {
  const sessions = await store.list();
  if (sessions.length === 0) io.stdout(`no sessions in ${store.folder}\n`);
  for (const s of sessions)
    io.stdout(
      `${s.id}  ${s.updatedAt.slice(0, 16).replace('T', ' ')}  ${s.model}  ${s.cwd}  ${JSON.stringify(s.title)}\n`,
    );
  return 0;
}

function report(error: unknown, io: Io): number {
  if (error instanceof UsageError) {
    io.stderr(`error: ${error.message}\n${CODE_USAGE.split('\n\n')[0]}\n`);
    return 2;
  }
  if (error instanceof ApiError && error.status === 401) {
    io.stderr(`error: the API key was refused: it is wrong, expired or revoked (${error.message})\n`);
    return 1;
  }
  io.stderr(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
}
