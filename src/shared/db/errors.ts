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
