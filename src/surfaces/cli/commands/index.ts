import { closest } from 'fastest-levenshtein';
import { batchCommands } from './batches.js';
import { budgetCommands } from './budgets.js';
import { catalogCommands } from './catalog.js';
import { clusterCommands } from './clusters.js';
import { costCommands } from './costs.js';
import { engineCommands } from './engines.js';
import type { Command } from './command.js';
import { keyCommands } from './keys.js';
import { nodeCommands } from './nodes.js';
import { orgCommands } from './orgs.js';
import { stackCommands } from './stacks.js';
import { usageCommand } from './usage.js';
import { userCommands } from './users.js';
import { walletCommands } from './wallet.js';

/** Every command, in the order `tollgate help` lists them. */
export const COMMANDS: readonly Command[] = [
  ...orgCommands,
  ...userCommands,
  ...walletCommands,
  ...keyCommands,
  ...budgetCommands,
  ...catalogCommands,
  ...engineCommands,
  ...nodeCommands,
  ...clusterCommands,
  ...stackCommands,
  ...costCommands,
  ...batchCommands,
  usageCommand,
];

/**
 * A command by its words; a group may be a command by itself (`models`, without an action).
 *
 * @example
 * const command = findCommand('keys', 'create');
 */
export function findCommand(group: string | undefined, action: string | undefined): Command | undefined {
  const name = action === undefined ? group : `${group} ${action}`;
  return COMMANDS.find((command) => command.name === name);
}

/** The usage lines of a group (`keys`), or of all commands. */
export function usageLines(group?: string): string[] {
  return COMMANDS.filter((command) => !group || command.name === group || command.name.startsWith(`${group} `)).map(
    usageOf,
  );
}

export function usageOf(command: Command): string {
  return `tollgate ${command.name}${command.args ? ` ${command.args}` : ''}`;
}

/**
 * The command nearest to what was typed: within the group when the group is
 * known (`keys lst` → `keys list`), else by edit distance over every name.
 *
 * @example
 * closestCommand(['kyes', 'list']).name; // 'keys list'
 */
export function closestCommand(words: string[]): Command {
  const typed = words.join(' ');
  const group = COMMANDS.filter((command) => command.name.split(' ')[0] === words[0]);
  const candidates = group.length > 0 ? group : COMMANDS;
  const name = closest(
    typed,
    candidates.map((command) => command.name),
  );
  return candidates.find((command) => command.name === name)!;
}
