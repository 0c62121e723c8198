import { z } from 'zod';

/** The longest email taken (RFC 5321's path limit). */
export const EMAIL_MAX = 254;

/**
 * An email as the gateway stores and compares it: trimmed, NFKC-normalized
 * (a full-width `ｍ` is an `m`, the Kelvin sign a `K`), then lower-cased by
 * JavaScript. Every way an email comes in (sign-up, the users APIs, the
 * portal's forms, sign-in and its failure counter) goes through here, and
 * the store compares the result byte for byte: no second case fold in SQL
 * that could disagree with this one (PostgreSQL's `lower()` follows the
 * server's locale; JavaScript's does not).
 *
 * @example
 * normalizeEmail(' Ada@Example.COM ');   // 'ada@example.com'
 * normalizeEmail('ｍini@example.com');   // 'mini@example.com'
 * normalizeEmail('mİni@example.com');   // 'mi̇ni@example.com': another address (a dotted i), which no account may take
 */
export function normalizeEmail(raw: string): string {
  return raw.trim().normalize('NFKC').toLowerCase();
}

/**
 * The email field of every body and form that sets one: normalized, then
 * checked as an email (so a spelling that normalizes to something else is
 * refused, not stored), answering the normalized form.
 */
export const emailField = z
  .string()
  .trim()
  .max(EMAIL_MAX)
  .transform(normalizeEmail)
  .pipe(z.email('Must be an email address.').max(EMAIL_MAX));
