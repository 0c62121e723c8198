import { pricePerMillion } from '../gateway/billing/money.js';
import { isMode, MODES } from './approval.js';
import { money } from './cost.js';
import type { UsageRow } from './gateway.js';
import type { Agent } from './loop.js';
import { projectContext } from './context.js';
import { clean } from './render.js';
import { type Question, resumeCommand } from './resume.js';

export const HELP = `Commands:
  /help              this list
  /model [ID]        list the models this key can call, or switch to one
  /mode [MODE]       show or switch the approval mode: ask, auto-edit, yolo, plan
  /cost              this session's billed cost and tokens (the key's usage records), and the wallet's balance
  /expand [N]        the whole result of the last tool call (or the Nth last)
  /undo              put back the files the last turn changed (or created) as they were before it
  /resume [N|ID]     pick an earlier session of this folder (first task, date, cost) and go on with it
  /clear             start a new session (the old one stays on disk)
  /compact           summarise the conversation now, to free the model context
  /mcp               the MCP servers started and how many tools each offers
  /exit              leave (Ctrl-C twice, or Ctrl-D, also leaves)
Ctrl-C cancels the answer or command under way. Ctrl-J or Alt-Enter: a new line; a paste stays one message.
@path attaches a file of the project (Tab completes the path).`;

/**
 * A slash command typed at the prompt. Answers 'exit' to leave; what it
 * prints goes through `say` (already the agent's own text, not the model's).
 *
 * @example
 * if ((await slashCommand('/mode plan', agent, say, signal, question)) === 'exit') break;
 */
export async function slashCommand(
  line: string,
  agent: Agent,
  say: (text: string) => void,
  signal: AbortSignal,
  question: Question,
): Promise<'exit' | undefined> {
  const [name, ...rest] = line.trim().split(/\s+/);
  const argument = rest.join(' ');
  switch (name) {
    case '/help':
      say(HELP);
      return undefined;
    case '/exit':
    case '/quit':
      return 'exit';
    case '/mode':
      say(switchMode(agent, argument));
      return undefined;
    case '/model':
      say(await switchModel(agent, argument));
      return undefined;
    case '/cost':
      say(await costLines(agent));
      return undefined;
    case '/clear': {
      const { store, tools } = agent.deps;
      agent.switchTo(store.create(tools.root, agent.model));
      agent.session.messages.push({ role: 'system', content: await projectContext(tools.root, tools.limits) });
      say(`new session ${agent.session.id}`);
      return undefined;
    }
    case '/expand': {
      const entry = agent.toolLog.at(-(Number(argument) || 1));
      say(entry ? `● ${clean(entry.title)}\n${clean(entry.result)}` : 'no tool call to expand yet');
      return undefined;
    }
    case '/undo': {
      const done = await agent.undo();
      say(done ? done.join('\n') : 'nothing to undo: no turn of this session changed a file');
      return undefined;
    }
    case '/resume':
      await resumeCommand(agent, argument, say, question, signal);
      return undefined;
    case '/mcp': {
      const servers = agent.deps.tools.mcp?.summary() ?? [];
      say(servers.length ? clean(servers.join('\n')) : 'no MCP server started (docs/coding-agent.md, "MCP servers")');
      return undefined;
    }
    case '/compact':
      await agent.compact(signal);
      say('compacted');
      return undefined;
    default:
      say(`unknown command ${name}; /help lists them`);
      return undefined;
  }
}

function switchMode(agent: Agent, argument: string): string {
  if (argument === '') return `mode: ${agent.mode} (choose from ${MODES.join(', ')})`;
  if (!isMode(argument)) return `no mode "${argument}": choose from ${MODES.join(', ')}`;
  agent.mode = argument;
  return argument === 'yolo' ? 'mode: yolo: edits and commands in the project run without asking' : `mode: ${argument}`;
}

async function switchModel(agent: Agent, argument: string): Promise<string> {
  const models = await agent.deps.gateway.models();
  agent.deps.contextLengths.clear();
  for (const model of models) agent.deps.contextLengths.set(model.id, model.contextLength);
  if (argument === '') {
    return (
      models
        .map(
          (m) =>
            `${m.id === agent.model ? '*' : ' '} ${m.id}${m.contextLength ? `  (context ${m.contextLength} tokens)` : ''}  ${priceOf(agent, m.id)}`,
        )
        .join('\n') || 'this key can call no chat model'
    );
  }
  if (!models.some((m) => m.id === argument)) return `no model "${argument}" for this key; /model lists them`;
  agent.session.model = argument;
  return `model: ${argument}`;
}

function priceOf(agent: Agent, model: string): string {
  const price = agent.deps.prices.get(model);
  if (!price) return 'no price listed';
  const { currency } = agent.deps;
  const cached =
    price.cachedInputNanosPerToken === price.inputNanosPerToken
      ? ''
      : ` (${pricePerMillion(price.cachedInputNanosPerToken)} cached)`;
  return `${pricePerMillion(price.inputNanosPerToken)} ${currency} in${cached} / ${pricePerMillion(price.outputNanosPerToken)} ${currency} out per million tokens`;
}

/**
 * One session cost, the billed one: the key's usage records of the session's requests (a cancelled
 * one included, which no answer counted). Only when they cannot be read, what the agent counted
 * from each answer, said so.
 */
async function costLines(agent: Agent): Promise<string> {
  const { totals, requestIds = [], createdAt } = agent.session;
  const { currency, gateway } = agent.deps;
  const [balance, usage] = await Promise.all([
    gateway.balance(),
    gateway.usageOf(requestIds, createdAt).catch(() => null),
  ]);
  const lines: string[] = [];
  if (usage === null)
    lines.push(
      `session ${agent.session.id}: ${money(BigInt(totals.costNanos), currency)} as counted here from ${totals.requests} answers (the usage records cannot be read now: the bill may differ, a cancelled request's included)`,
    );
  else {
    const sum = (of: (r: UsageRow) => number) => usage.records.reduce((total, r) => total + of(r), 0);
    const billed = usage.records.reduce((total, r) => total + BigInt(r.cost_nanos), 0n);
    const cached = sum((r) => r.prompt_tokens_details?.cached_tokens ?? 0);
    lines.push(
      `session ${agent.session.id}: ${money(billed, currency)} billed for ${usage.records.length} requests, ${sum((r) => r.prompt_tokens)} tokens in${cached ? ` (${cached} cached)` : ''}, ${sum((r) => r.completion_tokens)} out (the key's usage records${usage.missing ? `; ${usage.missing} not recorded yet` : ''})`,
    );
  }
  lines.push(balance === null ? 'wallet: the gateway does not report it' : `wallet: ${money(balance, currency)}`);
  return lines.join('\n');
}
