import { money } from './cost.js';
import type { Agent } from './loop.js';
import type { Paint } from './render.js';

/**
 * How long the status line waits for the wallet before saying it was not read: the prompt never
 * waits longer.
 */
export const WALLET_WAIT_MS = 3000;

/**
 * `─ sim-chat · mode ask · session 0.0012 USD · wallet 4.99 USD`: under the
 * banner and under each task, above the prompt. A wallet the gateway does not
 * report, or not within `waitMs`, is said to be not read rather than waited for.
 *
 * @example
 * say(await statusLine(agent, paint));
 */
export async function statusLine(agent: Agent, paint: Paint, waitMs = WALLET_WAIT_MS): Promise<string> {
  const { currency, gateway } = agent.deps;
  const balance = await withinTime(gateway.balance(), waitMs);
  const parts = [
    agent.model,
    `mode ${agent.mode}`,
    `session ${money(BigInt(agent.session.totals.costNanos), currency)}`,
    balance === 'late'
      ? `wallet not read (no answer in ${waitMs / 1000} s)`
      : balance === null
        ? 'wallet not read (the gateway did not report it)'
        : `wallet ${money(balance, currency)}`,
  ];
  return paint.dim(`─ ${parts.join(' · ')}`);
}

/** The promise's value, or 'late' when it has not settled within `ms`. */
export async function withinTime<T>(promise: Promise<T>, ms: number): Promise<T | 'late'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `worked 2.1s · this task 0.0005532 USD`: under a task's last figures, how
 * long it took (Claude Code and Codex say it too) and what it cost in all;
 * the time only (null) after a cancel, whose partial answer is billed but not counted here.
 *
 * @example
 * worked(2140, 553200n, 'USD'); // 'worked 2.1s · this task 0.0005532 USD'
 */
export function worked(ms: number, taskNanos: bigint | null, currency: string): string {
  return taskNanos === null
    ? `worked ${duration(ms)}`
    : `worked ${duration(ms)} · this task ${money(taskNanos, currency)}`;
}

/** `0.4s`, `2.1s`, `59.9s`, `1m 05s`, `62m 00s`: tenths under a minute, whole seconds after. */
export function duration(ms: number): string {
  if (ms < 59_950) return `${(ms / 1000).toFixed(1)}s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)}m ${String(seconds % 60).padStart(2, '0')}s`;
}
