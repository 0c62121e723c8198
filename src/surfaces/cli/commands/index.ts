import { catalogCommands } from './catalog.js';
import { clusterCommands } from './clusters.js';
import { costCommands } from './costs.js';
import { engineCommands } from './engines.js';
import type { Command } from './command.js';
import { keyCommands } from './keys.js';
import { nodeCommands } from './nodes.js';
import { orgCommands } from './orgs.js';
import { stackCommands } from './stacks.js';
import { userCommands } from './users.js';
import { walletCommands } from './wallet.js';

/** Every command, in the order `tollgate help` lists them. */
export const COMMANDS: readonly Command[] = [
  ...orgCommands,
  ...userCommands,
  ...walletCommands,
  ...keyCommands,
  ...catalogCommands,
  ...engineCommands,
  ...nodeCommands,
  ...clusterCommands,
  ...stackCommands,
  ...costCommands,
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
  return COMMANDS.filter((command) => !group || command.name === group || command.name.startsWith(`${group} `)).map(usageOf);
}

export function usageOf(command: Command): string {
  return `tollgate ${command.name}${command.args ? ` ${command.args}` : ''}`;
}
