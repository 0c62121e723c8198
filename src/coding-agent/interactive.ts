import { createInterface, type Interface } from 'node:readline/promises';
import { terminalAsk } from './ask.js';
import { mentionCompleter, taskText, terminalInput } from './input.js';
import { withMentions } from './mentions.js';
import type { Agent } from './loop.js';
import { slashCommand } from './commands.js';
import { type Question, resumeCommand, resumeInto } from './resume.js';
import { clean, type Paint } from './render.js';
import { statusLine, worked } from './status-line.js';
import type { View } from './view.js';

/** The person's terminal: the prompt's line editor, and its question for an approval (ask.ts). */
export interface Prompt {
  rl: Interface;
  ask: View['ask'];
  /** Closes the line editor and puts the terminal back (bracketed paste off, input.ts); once. */
  close(): void;
}

/**
 * Opens the prompt on this process's terminal, before the view that asks on
 * it and the agent: `@path` completion in `root`.
 *
 * @example
 * const prompt = openPrompt(root, paint);
 * const view = terminalView(write, paint, true, prompt.ask);
 */
export function openPrompt(root: string, paint: Paint): Prompt {
  const input = terminalInput(process.stdin, process.stdout);
  const rl = createInterface({
    input,
    output: process.stdout,
    terminal: true,
    historySize: 200,
    completer: mentionCompleter(root),
  });
  let open = true;
  const close = () => {
    if (!open) return;
    open = false;
    rl.close();
    input.restore();
  };
  return { rl, ask: terminalAsk(rl, paint), close };
}

/**
 * The interactive session: a prompt, a task or a /command per line. Ctrl-C
 * while the agent works cancels the request (or command) in flight and
 * comes back to the prompt; Ctrl-C at the prompt warns, and a second one
 * leaves. Ctrl-D leaves too. Answers the exit code.
 *
 * @example
 * process.exitCode = await interactive(agent, paint, prompt, 'resumed');
 */
export async function interactive(
  agent: Agent,
  paint: Paint,
  prompt: Prompt,
  start: 'new' | 'resumed' | 'pick' = 'new',
): Promise<number> {
  const { rl, ask } = prompt;
  const say = (text: string) => process.stdout.write(`${text}\n`);
  let busy: AbortController | undefined;
  let armed = false;
  let leave: () => void = () => undefined;
  const left = new Promise<null>((resolve) => (leave = () => resolve(null)));
  rl.on('close', leave);
  // A line typed while the agent works (no question pending) is the next task, not lost.
  const typedAhead: string[] = [];
  rl.on('line', (line) => typedAhead.push(line));
  rl.on('SIGINT', () => {
    if (busy) {
      busy.abort();
      return;
    }
    if (armed) return leave();
    armed = true;
    rl.write(null, { ctrl: true, name: 'u' });
    process.stdout.write(`\n${paint.dim('(Ctrl-C again, or /exit, to leave)')}\n`);
    rl.prompt();
  });
  const question: Question = (prompt, signal) => rl.question(prompt, { signal });
  say(banner(agent, paint));
  const notice = (text: string) => say(paint.yellow(clean(text)));
  // Leaving (Ctrl-C twice, Ctrl-D) while the trust question of a project's servers is asked answers
  // it no.
  const starting = new AbortController();
  void left.then(() => starting.abort());
  // "No, and say what instead" (a thrown refusal) is a no here: there is no call to refuse.
  const trusted = (q: string) =>
    ask(q, starting.signal, null).then(
      (a) => a === 'yes',
      () => false,
    );
  await agent.deps.tools.mcp?.start(notice, trusted);
  if (start === 'resumed') resumeInto(agent, agent.session, say);
  if (start === 'pick') await resumeCommand(agent, '', say, question, new AbortController().signal);
  // The wallet from the start (read at most WALLET_WAIT_MS): the person sees what they have before
  // the first task.
  say(await statusLine(agent, paint));
  try {
    for (;;) {
      const typed = typedAhead.shift() ?? (await Promise.race([rl.question(paint.bold('› ')), left]));
      if (typed === null) return 0;
      const line = taskText(typed);
      armed = false;
      if (line.trim() === '') continue;
      busy = new AbortController();
      try {
        if (line.trim().startsWith('/')) {
          if ((await slashCommand(line, agent, say, busy.signal, question)) === 'exit') return 0;
          continue;
        }
        await task(agent, line, busy.signal, say, paint);
      } catch (error) {
        say(paint.red(`error: ${error instanceof Error ? error.message : String(error)}`));
      } finally {
        if (busy.signal.aborted) armed = true;
        busy = undefined;
      }
    }
  } finally {
    prompt.close();
    say(`\n${paint.dim(`session ${agent.session.id} kept: resume with tollgate code --continue`)}`);
  }
}

async function task(
  agent: Agent,
  line: string,
  signal: AbortSignal,
  say: (text: string) => void,
  paint: Paint,
): Promise<void> {
  const { text, notes } = await withMentions(agent.deps.tools, line);
  for (const note of notes) say(paint.dim(note));
  const started = performance.now();
  const spentBefore = BigInt(agent.session.totals.costNanos);
  const outcome = await agent.run(text, signal);
  const spent = BigInt(agent.session.totals.costNanos) - spentBefore;
  const cancelled = outcome.status === 'cancelled';
  say(paint.dim(worked(performance.now() - started, cancelled ? null : spent, agent.deps.currency)));
  if (cancelled) say(paint.yellow('cancelled (the gateway bills only what was generated); Ctrl-C again to leave'));
  else if (outcome.stop) say(paint.red(`stopped: ${outcome.stop.message}`));
  say(await statusLine(agent, paint));
}

function banner(agent: Agent, paint: Paint): string {
  const lines = [
    `${paint.bold('tollgate code')} · model ${agent.model} · mode ${agent.mode} · session ${agent.session.id}`,
    paint.dim(`project ${agent.deps.tools.root} · /help for commands · Ctrl-C cancels`),
  ];
  if (agent.mode === 'yolo') lines.push(paint.red('yolo mode: edits and commands in this project run WITHOUT asking'));
  return lines.join('\n');
}
