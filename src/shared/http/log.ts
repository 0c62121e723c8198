import pino from 'pino';
import type { LogLevel } from '../../config/index.js';

/**
 * The gateway's logger: JSON lines on stderr (pino), one object a line with
 * `time`, `level`, `message`, and the fields given: a line about a request
 * names it itself (a `requestId` field; nothing binds it for the caller, see
 * `requestId()` in `request.ts`). Callers pass fields, never whole requests; fields
 * that could carry a secret are redacted all the same (REDACTED_FIELDS).
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

/** Fields replaced by "[redacted]" wherever they appear, at the top level or one level down. */
const REDACTED_FIELDS = [
  'authorization',
  'cookie',
  'secret',
  'secretHash',
  'hash',
  'token',
  'password',
  'params',
  'parameters',
  'apiKey',
];

export function createLogger(
  level: LogLevel,
  write: (line: string) => void = (line) => process.stderr.write(line),
): Logger {
  const logger = pino(
    {
      level,
      messageKey: 'message',
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED_FIELDS.flatMap((field) => [field, `*.${field}`]), censor: '[redacted]' },
    },
    { write },
  );
  return {
    debug: (message, fields) => logger.debug(fields ?? {}, message),
    info: (message, fields) => logger.info(fields ?? {}, message),
    warn: (message, fields) => logger.warn(fields ?? {}, message),
    error: (message, fields) => logger.error(fields ?? {}, message),
  };
}

/**
 * Describes an unknown thrown value for a log line, safely: the error's class
 * and message, and for database errors the SQLSTATE and the table, column or
 * constraint, never the query's parameters or values (drizzle's
 * `DrizzleQueryError` message carries them, and key hashes are among them).
 */
export function describeError(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { error: typeof error };
  const database = databaseErrorOf(error);
  if (database) {
    // postgres.js names them table_name, column_name…; PGlite table, column…
    const field = (name: string) =>
      (database as unknown as Record<string, string | undefined>)[`${name}_name`] ??
      (database as unknown as Record<string, string | undefined>)[name];
    const code = database.code;
    // A SQLSTATE means the server answered; without one the connection failed, and its message
    // names no data.
    const detail = code ? `the database refused the statement (SQLSTATE ${code})` : safeMessage(database.message);
    return {
      error: error.name,
      code,
      table: field('table'),
      column: field('column'),
      constraint: field('constraint'),
      detail,
    };
  }
  return {
    error: error.name,
    detail: safeMessage(error.message),
    cause: error.cause instanceof Error ? safeMessage(error.cause.message) : undefined,
  };
}

/** The error (or its cause) that came from the database driver, if any. */
function databaseErrorOf(error: Error): (Error & { code?: string }) | null {
  for (
    let current: unknown = error, depth = 0;
    current instanceof Error && depth < 5;
    current = current.cause, depth++
  ) {
    if (current.name === 'DrizzleQueryError' || current.name === 'PostgresError' || 'severity' in current) {
      const cause = current.name === 'DrizzleQueryError' && current.cause instanceof Error ? current.cause : current;
      return cause;
    }
  }
  return null;
}

/** A message cut before any query text or parameter list it carries. */
function safeMessage(message: string): string {
  const cut = message.search(/Failed query:|params:|parameters:/i);
  return (cut === -1 ? message : message.slice(0, cut)).slice(0, 300).trim() || 'query failed';
}
