import type { LogLevel } from '../config.js';

/**
 * A small structured logger: one JSON object a line on stderr.
 * Callers pass fields, never whole requests, so no secret reaches a log.
 *
 * @example
 * const log = createLogger('info');
 * log.info('gateway listening', { port: 8080 });
 */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export function createLogger(level: LogLevel, write: (line: string) => void = (line) => process.stderr.write(line)): Logger {
  const emit = (at: Exclude<LogLevel, 'silent'>) => (message: string, fields?: Record<string, unknown>) => {
    if (RANK[at] < RANK[level]) return;
    write(`${JSON.stringify({ time: new Date().toISOString(), level: at, message, ...fields })}\n`);
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

/** Describes an unknown thrown value for a log line (name and message, plus the stack at debug level). */
export function describeError(error: unknown): Record<string, unknown> {
  if (error instanceof Error) return { error: error.name, detail: error.message, cause: error.cause instanceof Error ? error.cause.message : undefined };
  return { error: String(error) };
}
