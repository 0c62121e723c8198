import { GatewayError } from '../../shared/http/errors.js';
import { isUniqueViolation } from '../../shared/db/errors.js';

/**
 * Turns a unique-index violation (two requests racing for the same model id,
 * display name or repo id) into 409 `conflict` instead of a 500.
 *
 * @example
 * const row = await asConflict(catalog.update(id, changes), 'Another model already uses this display name.');
 */
export async function asConflict<T>(work: Promise<T>, message: string): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (isUniqueViolation(error)) throw new GatewayError('conflict', message, { cause: error });
    throw error;
  }
}
