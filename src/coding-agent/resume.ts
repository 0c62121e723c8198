import type { Agent } from './loop.js';
import type { Session } from './sessions.js';
import { pickerLine, transcript } from './transcript.js';

/** Sessions the picker lists: this folder's latest. */
export const PICKER_SESSIONS = 20;

/** Asks the person a line (the prompt's readline), '' when cancelled. */
export type Question = (prompt: string, signal: AbortSignal) => Promise<string>;

/**
 * `/resume [N|ID]` and `--resume`: with no argument, a picker of this
 * folder's sessions (first task, last used, cost) asks which; the chosen
 * session becomes the agent's and its earlier conversation is shown.
 *
 * @example
 * await resumeCommand(agent, '', say, (p, s) => rl.question(p, { signal: s }), signal);
 */
export async function resumeCommand(
  agent: Agent,
  argument: string,
  say: (text: string) => void,
  question: Question,
  signal: AbortSignal,
): Promise<void> {
  const { store, tools, currency } = agent.deps;
  const sessions = (await store.list())
    .filter((s) => s.cwd === tools.root && s.title !== '' && s.id !== agent.session.id)
    .slice(0, PICKER_SESSIONS);
  let choice = argument;
  if (choice === '') {
    if (sessions.length === 0) return say('no earlier session in this folder');
    say(
      [tools.paint.bold('  #  last used (UTC)             cost  first task')]
        .concat(sessions.map((s, i) => pickerLine(i + 1, s, currency)))
        .join('\n'),
    );
    choice = (await question(`resume which? (1-${sessions.length}, Enter for none) `, signal).catch(() => '')).trim();
    if (choice === '') return say('not resumed');
  }
  const picked = /^\d{1,3}$/.test(choice)
    ? sessions[Number(choice) - 1]
    : await store.load(choice).catch(() => undefined);
  if (!picked) return say(`no session "${choice}": /resume lists them`);
  // Its tools would run here, on a conversation about another folder's files.
  if (picked.cwd !== tools.root)
    return say(
      `session ${picked.id} was started in ${picked.cwd}: resume it there (tollgate code --session ${picked.id})`,
    );
  resumeInto(agent, picked, say);
}

/** Makes `session` the agent's and shows where it was. */
export function resumeInto(agent: Agent, session: Session, say: (text: string) => void): void {
  // A model the key can no longer call is replaced by the current one.
  if (!agent.deps.contextLengths.has(session.model)) session.model = agent.model;
  agent.switchTo(session);
  say(transcript(session, agent.deps.tools.paint));
  say(agent.deps.tools.paint.dim(`resumed session ${session.id} · model ${session.model}`));
}
