/**
 * Whether a database error is a unique-index violation (PostgreSQL's code
 * 23505; PGlite gives the same). Drizzle wraps the driver's error, so its
 * causes are followed a few levels down.
 *
 * @example
 * try { await db.insert(nodes).values(row); } catch (error) { if (isUniqueViolation(error)) throw new GatewayError('conflict', 'Taken.'); throw error; }
 */
export function isUniqueViolation(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Object && depth < 5; depth++) {
    if ((current as { code?: unknown }).code === '23505') return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Whether a database error is a statement ended by its timeout (PostgreSQL's `statement_timeout`,
 * code 57014: the reports' connections set it, `client.ts`), followed down a few causes as
 * `isUniqueViolation` does.
 *
 * @example
 * if (isStatementTimeout(error)) throw new GatewayError('server_busy', 'The report took too long.');
 */
export function isStatementTimeout(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Object && depth < 5; depth++) {
    if ((current as { code?: unknown }).code === '57014') return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
